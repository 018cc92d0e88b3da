#pragma once
// Byte counts as text, one function per format in use, so the same number reads the same
// in the OOM message, the memory summary, the CLI and the viewer; and the one parser of
// byte sizes users write.

#include <cstdint>
#include <string>

namespace cudascope::util {

// PyTorch's format_size (c10/cuda/CUDACachingAllocator.cpp), used in the OOM message:
// up to 1024 "512 bytes", then "1.50 KiB", "20.00 MiB", "1.25 GiB" (two decimals,
// the unit switching only once the value exceeds 1024 of the smaller one).
std::string format_size(uint64_t bytes);

// PyTorch's memory_summary _format_size: the value scaled by 1024 (floor division)
// while `reference` is at least 768 of the current unit, right-aligned in 6 characters
// and a 3-character unit: "  1234 KiB", "     0 B  ". Signed: summary rows can be negative.
std::string format_summary_size(int64_t bytes, double reference);

// Human-readable for tables: "512 B", "1.50 KiB", "3.25 GiB" (two decimals once scaled,
// scaling while the value is at least 1024, up to TiB).
std::string format_bytes(uint64_t bytes);

// Parses a byte size: a number, then optionally a unit, case-insensitive and always binary
// ("16G", "16GB" and "16GiB" are 16 << 30; "1.5GiB", "512m", "4096"). The one parser of
// size variables (CUDASCOPE_SIM_MEMORY, CUDASCOPE_INPUT_BUDGET); false when not a size.
bool parse_byte_size(const std::string& text, uint64_t& bytes);

}  // namespace cudascope::util
