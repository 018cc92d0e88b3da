# Qt parts: the models headless, and the real window under Xvfb (label gui).
find_package(ZLIB REQUIRED)  # the model test writes gzip traces
# (and, with the exporters' trace writer, cudascope's own rank traces: nccl_rank_traces.h)
cudascope_add_test(NAME gui_model_test
  SOURCES gui_model_test.cpp
  LIBS cudascope::gui_model cudascope::exporters Qt6::Test nlohmann_json::nlohmann_json ZLIB::ZLIB
  LABELS unit
  ENV QT_QPA_PLATFORM=offscreen)
target_compile_definitions(gui_model_test PRIVATE CUDASCOPE_TEST_DATA="${_data}")
target_include_directories(gui_model_test PRIVATE ${PROJECT_SOURCE_DIR}/tests/analysis)

# The window test needs an X server: run_under_xvfb.sh starts one with xvfb-run, or
# exits 77 (skipped, with the reason) when none can be started or every test skipped; a
# failing test keeps its failure status whatever else it printed.
add_executable(gui_window_test gui_window_test.cpp)
target_link_libraries(gui_window_test PRIVATE cudascope_gui_app cudascope::exporters Qt6::Test GTest::gtest GTest::gtest_main)
target_include_directories(gui_window_test PRIVATE ${PROJECT_SOURCE_DIR}/tests/analysis)  # nccl_rank_traces.h
target_compile_definitions(gui_window_test PRIVATE CUDASCOPE_TEST_DATA="${_data}"
  CUDASCOPE_ARTIFACTS="${CMAKE_BINARY_DIR}/artifacts")
cudascope_warnings(gui_window_test)
add_test(NAME gui_window_screenshots
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_under_xvfb.sh $<TARGET_FILE:gui_window_test>)
set_tests_properties(gui_window_screenshots PROPERTIES LABELS gui TIMEOUT 300 SKIP_RETURN_CODE 77)
# The wrapper's own outcomes, with a stand-in xvfb-run (no X server needed).
add_test(NAME gui_xvfb_wrapper COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/xvfb_wrapper_test.sh)
set_tests_properties(gui_xvfb_wrapper PROPERTIES LABELS unit TIMEOUT 60)
