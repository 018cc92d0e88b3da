// What a CUPTI failure whose cause lies outside the program tells the user to do
// (cupti_source.h): the driver too old for this CUPTI, another profiler holding CUPTI, the
// driver's profiling restriction, a virtual GPU; nothing for a failure of the program's own.
#include "cupti_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

using cudascope::profiler::detail::cupti_failure_advice;
using ::testing::HasSubstr;

TEST(CuptiAdviceTest, ADriverTooOldForThisCuptiIsNamedWithTheToolkitItBelongsTo) {
  const std::string advice = cupti_failure_advice(CUPTI_ERROR_NOT_INITIALIZED);
  EXPECT_THAT(advice, HasSubstr("driver is older than the CUDA " + std::to_string(CUDA_VERSION / 1000) + "."));
  EXPECT_THAT(advice, HasSubstr("update the driver"));
}

TEST(CuptiAdviceTest, CausesOutsideTheProgramEachSayWhatToDo) {
  EXPECT_THAT(cupti_failure_advice(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), HasSubstr("Nsight Systems"));
  EXPECT_THAT(cupti_failure_advice(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), HasSubstr("NVreg_RestrictProfilingToAdminUsers"));
  EXPECT_THAT(cupti_failure_advice(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED), HasSubstr("virtual GPU"));
}

TEST(CuptiAdviceTest, AFailureOfTheCallItselfGetsNoAdvice) {
  EXPECT_EQ(cupti_failure_advice(CUPTI_ERROR_INVALID_PARAMETER), "");
  EXPECT_EQ(cupti_failure_advice(CUPTI_ERROR_INVALID_KIND), "");
}

}  // namespace
