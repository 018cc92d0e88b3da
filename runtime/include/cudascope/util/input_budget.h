#pragma once
// How many bytes a reader may take in before it gives up: the memory budget every file
// reader in cudascope (snapshot loaders, replay, trace reader) applies, so input that never
// ends (/dev/zero, a gzip bomb) fails with a clear message instead of exhausting memory.

#include <cstdint>
#include <string>

namespace cudascope::util {

// The default budget in bytes of (decompressed) input: CUDASCOPE_INPUT_BUDGET when set
// (a byte size as parse_byte_size() reads it, e.g. "512MiB"), otherwise a quarter of physical
// memory, and never more than a quarter of the address-space limit (ulimit -v) when one is
// set. Readers hold a few times their input in parsed form, hence the quarter. Throws
// std::invalid_argument naming the variable and value when CUDASCOPE_INPUT_BUDGET is not a size.
uint64_t input_budget();

// "input exceeds the N MiB budget (set CUDASCOPE_INPUT_BUDGET to raise it)": the one
// message every reader gives past its budget, so users learn one remedy.
std::string budget_exceeded_message(uint64_t budget_bytes);

}  // namespace cudascope::util
