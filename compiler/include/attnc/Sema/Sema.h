//===- Sema.h - Semantic checks of .attn files ------------------*- C++ -*-===//
//
// Resolves names and dims, binds call arguments to op parameters (OpTable),
// checks value kinds, and checks shapes and dtypes by calling the shared
// rules of attn/IR/AttnShapeRules.h, whose errors are mapped back to the
// source range of the argument at fault. Annotates the AST with every
// tensor's shape. A failed statement poisons its result, so one mistake is
// reported once, not again at every use.
//
// A call may name another block of the file (docs/spec.md §2, "calling a
// block"): its inputs are bound positionally or by keyword, its params by
// keyword, every argument against the callee's declared shape, and its outputs
// are the call's results. Blocks are checked callees first: a block that calls
// one defined later in the file waits for it (finish() checks those), and a
// block that calls itself, directly or through others, is an error.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_SEMA_SEMA_H
#define ATTNC_SEMA_SEMA_H

#include "attnc/Parse/AST.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <string>
#include <vector>

namespace attnc {

class DiagnosticEngine;

class Sema {
public:
  /// The most arguments (inputs, params and outputs together) a block may
  /// have: each is a parameter of the kernel's C function, and parts of
  /// MLIR's lowering grow with their number squared.
  static constexpr unsigned kMaxBlockArguments = 1024;
  /// The most blocks one file may define: compile time grows linearly with
  /// them (every block is a kernel with its own machine code), and this
  /// keeps a file's compile within minutes.
  static constexpr unsigned kMaxBlocks = 1024;

  explicit Sema(DiagnosticEngine &diag) : diag(diag) {}

  /// Checks and annotates `module`; true when no error was found (in this
  /// call or before it, e.g. by the parser).
  bool check(ast::Module &module);

  /// The names of every block of the file, before its blocks are checked
  /// one by one: a call of a name given here that is not an op is a block
  /// call, checked once that block has been (check() declares them itself).
  void declareBlockNames(llvm::StringRef sourceText);
  void declareBlockName(llvm::StringRef name) { fileBlockNames.insert(name); }

  /// Checks one block (blocks of one file go through one Sema, which also
  /// checks that their names are unique). A block that calls a block not
  /// checked yet (defined later) is checked by finish().
  void checkBlock(ast::Block &block);

  /// Checks the blocks that checkBlock left waiting, callees first.
  void finish();

  /// The block that a call of `name` refers to (its first definition), or
  /// null; and whether `name` is one of the file's blocks.
  ast::Block *lookupBlock(llvm::StringRef name) const {
    return blocksByName.lookup(name);
  }
  bool isBlockName(llvm::StringRef name) const {
    return fileBlockNames.contains(name);
  }
  /// The file's block names, for suggestions.
  std::vector<llvm::StringRef> blockNameList() const;
  /// The chain of block calls from `from` to the block `to`, both included
  /// (`a`, `b`, `a` for a cycle), if `from` calls `to` directly or through
  /// other blocks.
  std::vector<std::string> callChain(const ast::Block &from,
                                     llvm::StringRef to) const;

  /// A name the header of a checked block declares (attn/Target/
  /// KernelAbi.h's headerNames) and the source name it comes from.
  struct HeaderName {
    std::string name;
    /// For messages: `dim 'N'`, `input 'X'`, `the include guard`, ...
    std::string what;
    const ast::Ident *source = nullptr;
    const ast::Block *block = nullptr;
    bool isEntry = false;
  };

private:
  /// Entries of the ABI (NAME_prepare, NAME_cuda, ...) of one block that
  /// are another block's name.
  void checkExportedEntries(const ast::Ident &name);
  /// Names of `block`'s header (`names`) that another checked block's
  /// header declares too.
  void checkHeaderNamesAcrossBlocks(const ast::Block &block,
                                    std::vector<HeaderName> names);
  /// Whether `block` calls a block of the file that is not checked yet
  /// (other than itself, which is an error at the call).
  bool waitsForCallee(const ast::Block &block) const;
  void runChecker(ast::Block &block);

  DiagnosticEngine &diag;
  llvm::StringSet<> fileBlockNames;
  llvm::StringMap<ast::Block *> blocksByName;
  std::vector<ast::Block *> waiting;
  llvm::StringMap<llvm::SMRange> blockNames;
  /// Upper-cased block names (the header's macros), for clashes.
  llvm::StringMap<const ast::Ident *> blockMacros;
  /// The header names of the blocks checked so far.
  llvm::StringMap<HeaderName> fileHeaderNames;
};

} // namespace attnc

#endif // ATTNC_SEMA_SEMA_H
