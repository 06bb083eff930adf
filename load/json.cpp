// Boost.JSON is used header-only: its sources are compiled once, here.
#include <boost/json/src.hpp>
