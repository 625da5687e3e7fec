#pragma once
// Where the model folder is when --model is omitted: the bundled demo model, found relative to the
// working directory or to the executable (build/<preset>/dcuserve inside the repository).

#include <string>

namespace dcu {

// `flag_value` when non-empty, else the bundled demo model; throws dcu::Error when neither exists.
std::string resolve_model_dir(const std::string& flag_value);

}  // namespace dcu
