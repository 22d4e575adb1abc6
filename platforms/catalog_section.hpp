// A catalog overlay read from a mapping inside another file (a slice's `catalog:` section).
// Internal to platforms/; the file form is extend_catalog(base, path) in catalog.hpp.
#pragma once
#include "platforms/catalog.hpp"
#include "platforms/yaml_fields.hpp"

namespace fabtrain {

Catalog extend_catalog(const Catalog& base, const YamlFields& section);

}  // namespace fabtrain
