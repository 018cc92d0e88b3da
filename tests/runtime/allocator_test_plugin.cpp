// A pluggable allocator for the tests, with torch's CUDAPluggableAllocator signatures: it
// hands out host memory, which is all a test of the plumbing needs.
#include <cstddef>
#include <cstdlib>

extern "C" {
void* test_alloc(std::size_t size, int /*device*/, void* /*stream*/) { return std::malloc(size); }
void test_free(void* ptr, std::size_t /*size*/, int /*device*/, void* /*stream*/) { std::free(ptr); }
}
