#include "core/result.hpp"

#include <stdexcept>

namespace headerd {

void throw_exception_from_error(const Error& e, const boost::source_location&) { throw std::runtime_error(e.message); }

}  // namespace headerd
