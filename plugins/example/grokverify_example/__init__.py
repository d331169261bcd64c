"""An example grokverify plugin (docs/extending.md, "Plugins"): importing it registers its spec
classes; their implementations (torch) are imported only when a claim runs."""

GROKVERIFY_PLUGIN_API = 1
# part of the store key of every record that uses this plugin's kinds: change it whenever a
# change here would change what those records hold
RESULTS_VERSION = "1"

from grokverify_example import specs  # noqa: E402,F401  (registers the kinds)
