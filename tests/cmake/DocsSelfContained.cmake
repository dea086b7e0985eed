# cmake -DROOT=<source dir> -P DocsSelfContained.cmake
# The repository's code and docs refer to no file outside it: the product
# contract is docs/spec.md ("SPEC §N" named a file users do not have), and
# nothing points into the team's ../shared folder.
set(patterns)
foreach(dir . bench cmake compiler dialects docs python runtime samples
    scripts tests)
  foreach(ext md h cpp c py td def cmake txt toml in test mlir attn sh)
    if(dir STREQUAL ".")
      list(APPEND patterns ${ROOT}/*.${ext})
    else()
      list(APPEND patterns ${ROOT}/${dir}/*.${ext})
    endif()
  endforeach()
endforeach()
file(GLOB top RELATIVE ${ROOT} ${ROOT}/*.md ${ROOT}/*.txt ${ROOT}/*.toml
  ${ROOT}/*.json)
list(FILTER patterns EXCLUDE REGEX "^${ROOT}/\\*")
file(GLOB_RECURSE files RELATIVE ${ROOT} ${patterns})
list(APPEND files ${top})
set(found "")
foreach(file ${files})
  if(file MATCHES "^(build|\\.venv|\\.git)[/-]|/build/|^docs/spec.md$|^tests/cmake/DocsSelfContained.cmake$")
    continue()
  endif()
  file(STRINGS ${ROOT}/${file} lines ENCODING UTF-8 REGEX "SPEC §|shared/(SPEC|TOOLCHAIN|STYLE)")
  foreach(line ${lines})
    string(APPEND found "${file}: ${line}\n")
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "references to files outside the repository (write "
    "docs/spec.md §N):\n${found}")
endif()
