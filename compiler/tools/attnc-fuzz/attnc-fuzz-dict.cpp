//===- attnc-fuzz-dict.cpp - The fuzzers' op words, from AttnOps.def ------===//
//
// Prints the part of a libFuzzer dictionary that the op set decides, one
// quoted word a line, so that a new op reaches the fuzzers without an edit
// of theirs:
//   attnc-fuzz-dict dsl  each op's DSL name and its parameters as keywords
//                        (`heads=`, `causal=true`): attnc.dict's op part
//   attnc-fuzz-dict ir   each op's `attn.` name: attn-ir.dict's op part
// The build appends it to the hand-written words (keywords of the language,
// MLIR punctuation) in the source directory's *.dict.in.
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <cstring>
#include <set>
#include <string>

int main(int argc, char **argv) {
  bool ir = argc == 2 && std::strcmp(argv[1], "ir") == 0;
  if (argc != 2 || (!ir && std::strcmp(argv[1], "dsl") != 0)) {
    std::fprintf(stderr, "usage: attnc-fuzz-dict dsl|ir\n");
    return 2;
  }
  std::set<std::string> ops, keywords;
#define ATTN_TENSOR(name, Getter) keywords.insert(#name "=");
#define ATTN_OPTIONAL_TENSOR(name, Getter) keywords.insert(#name "=");
#define ATTN_KEYWORD_TENSOR(name, Getter) keywords.insert(#name "=");
#define ATTN_POSITIONAL_FLOAT(name, Getter) keywords.insert(#name "=");
#define ATTN_INT(name, Getter) keywords.insert(#name "=");
#define ATTN_INT_DEFAULT(name, Getter, value) keywords.insert(#name "=");
#define ATTN_FLOAT(name, Getter) keywords.insert(#name "=");
#define ATTN_FLOAT_DEFAULT(name, Getter, value) keywords.insert(#name "=");
#define ATTN_FLAG(name, Getter) keywords.insert(#name "=true");
#define ATTN_DTYPE(name, Getter) keywords.insert(#name "=");
#define ATTN_OP(Kind, name, Class, rule, PARAMS)                               \
  ops.insert(name);                                                            \
  PARAMS
#include "attn/IR/AttnOps.def"
  for (const std::string &op : ops)
    std::printf("\"%s%s\"\n", ir ? "attn." : "", op.c_str());
  if (!ir)
    for (const std::string &keyword : keywords)
      std::printf("\"%s\"\n", keyword.c_str());
  return 0;
}
