// libyaml 0.2 (Debian: libyaml-dev to build, libyaml-0-2 at run time), under YAMLReader.
#include <yaml.h>
