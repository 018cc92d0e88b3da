#pragma once
// The consumer processes of the IPC tests (ipc_children.cpp): each is this test executable
// started with a flag and a SharedTensorHandle's text, run through cudascope::testing::run_self.
//
//   --ipc-write-child TEXT   opens the tensor twice (one mapping), prints what it saw
//                            ("sum=S same_base=1 open_handles=1"), records it on its
//                            stream (a no-op for another process's memory), writes 2x+1 into it,
//                            synchronises and exits, releasing it.
//   --ipc-hold-child TEXT    opens the tensor and exits without releasing it (as a consumer
//                            that crashed): the producer's counter stays at 1.
//   --ipc-reopen-child TEXT  four threads open and let go of the handle's segment again and
//                            again (one closing while another opens); prints the opens, the
//                            most mappings open at once and those left ("opens=N
//                            most_mapped=1 mapped_after=0" when reopening waits for the close).

#include "test_support.h"

#include <cudascope/cuda/ipc.h>

namespace cudascope::testing {

ChildResult run_ipc_child(const char* flag, const cuda::SharedTensorHandle& handle);

}  // namespace cudascope::testing
