// Umbrella header: everything in the ccf library.
#pragma once

#include "ccf/any_cuckoo_filter.hpp"
#include "ccf/bloom_filter.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/hash.hpp"
#include "ccf/status.hpp"
