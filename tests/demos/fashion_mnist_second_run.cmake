# ctest script (cmake -DEXE=<fashion_mnist> -DWORK=<scratch folder> -P this): no run replaces an
# earlier run's output silently.
# without --out every run writes a new folder (fashion_mnist_out/mlp-1, mlp-2); a run with --out
# naming a folder that holds a run's files stops before training, names the file and the ways
# out, and leaves the files as they were; with --overwrite it replaces them.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
# One evaluation pass of 1000 test images, not the whole set's 10 (no check here reads the accuracy;
# suite40b, 2026-11-29: about 0.6 CPU-s less per run on llvmpipe, warm).
set(short --epochs 1 --limit 128 --test-limit 1000)

function(demo expect_ok)
  execute_process(COMMAND ${EXE} ${short} ${ARGN} WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "fashion_mnist ${ARGN} failed (exit ${rc}):\n${out}${err}")
  elseif(NOT expect_ok AND rc EQUAL 0)
    message(FATAL_ERROR "fashion_mnist ${ARGN} succeeded where it must fail:\n${out}${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

# Without --out: a new folder, fashion_mnist_out/mlp-1.
set(run ${WORK}/fashion_mnist_out/mlp-1)
demo(TRUE)
file(SHA256 ${run}/metrics.json first)
file(TIMESTAMP ${run}/training_curves.png first_png "%s")
# The same folder again with --out: refused before training, the files untouched.
demo(FALSE --out ${run})
if(NOT err MATCHES "error: ${run}/[a-z_.]+ already exists \\(the output of an earlier run\\); choose another --out")
  message(FATAL_ERROR "second run into the same --out: unexpected message:\n${err}")
endif()
if(out MATCHES "epoch 1/1")
  message(FATAL_ERROR "second run into the same --out trained before refusing:\n${out}")
endif()
file(SHA256 ${run}/metrics.json second)
file(TIMESTAMP ${run}/training_curves.png second_png "%s")
if(NOT first STREQUAL second OR NOT first_png STREQUAL second_png)
  message(FATAL_ERROR "the refused run changed the first run's files")
endif()
# With --overwrite it replaces them.
demo(TRUE --out ${run} --overwrite --seed 2)
file(SHA256 ${run}/metrics.json third)
if(first STREQUAL third)
  message(FATAL_ERROR "--overwrite did not replace ${run}/metrics.json")
endif()
# Without --out again: the next folder, mlp-2.
demo(TRUE)
if(NOT EXISTS ${WORK}/fashion_mnist_out/mlp-2/metrics.json)
  message(FATAL_ERROR "a second run without --out did not write ${WORK}/fashion_mnist_out/mlp-2/metrics.json")
endif()
message(STATUS "second runs: refused without --overwrite, replaced with it; runs without --out: mlp-1, mlp-2")
