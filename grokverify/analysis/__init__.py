"""Analyses of trained representations and of the theories papers give for them."""
