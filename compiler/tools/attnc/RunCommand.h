//===- RunCommand.h - `attnc run`: JIT a block on .npy files ----*- C++ -*-===//

#ifndef ATTNC_TOOLS_ATTNC_RUNCOMMAND_H
#define ATTNC_TOOLS_ATTNC_RUNCOMMAND_H

#include "attnc/Codegen/Compile.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnc {

struct RunOptions {
  std::string specPath;
  /// The spec's text as read once (a spec from stdin cannot be read again).
  std::string specText;
  /// Empty: the spec's only block.
  std::string block;
  /// NAME=FILE.npy
  std::vector<std::string> inputs;
  /// Non-empty: DIR/NAME.npy for every input and param not in `inputs`.
  std::string inputDir;
  bool randomInputs = false;
  uint64_t seed = 0;
  /// Non-empty: every input and param used is written to DIR/NAME.npy.
  std::string saveInputsDir;
  std::string outputDir = ".";
  unsigned repeat = 1;
  /// 0: ATTNC_NUM_THREADS if set, else every core the process may use.
  unsigned threads = 0;
  CompileOptions compile;
};

/// Runs `attnc run` on a spec that the front end already accepted; returns
/// the process exit status (0, 1 for bad inputs, 2 for internal errors).
int runCommand(const RunOptions &options);

} // namespace attnc

#endif // ATTNC_TOOLS_ATTNC_RUNCOMMAND_H
