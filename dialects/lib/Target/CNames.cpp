//===- CNames.cpp - Names that reach the C interface of a kernel ----------===//

#include "attn/Target/CNames.h"

#include "attn/Target/KernelAbi.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#if defined(__linux__) && __has_include(<dlfcn.h>)
#include <dlfcn.h>
#define ATTNC_HAVE_DLSYM 1
#endif

using namespace mlir::attn::abi;

namespace {

/// Keywords of C (C89 to C23) and C++: the header is read by both.
const llvm::StringSet<> &keywords() {
  static const llvm::StringSet<> set = {
      // C
      "auto", "break", "case", "char", "const", "continue", "default", "do",
      "double", "else", "enum", "extern", "float", "for", "goto", "if",
      "inline", "int", "long", "register", "restrict", "return", "short",
      "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
      "unsigned", "void", "volatile", "while", "alignas", "alignof", "bool",
      "constexpr", "false", "nullptr", "static_assert", "thread_local", "true",
      "typeof", "typeof_unqual",
      // C++ (beyond C)
      "and", "and_eq", "asm", "bitand", "bitor", "catch", "char8_t", "char16_t",
      "char32_t", "class", "co_await", "co_return", "co_yield", "compl",
      "concept", "const_cast", "consteval", "constinit", "decltype", "delete",
      "dynamic_cast", "explicit", "export", "friend", "mutable", "namespace",
      "new", "noexcept", "not", "not_eq", "operator", "or", "or_eq", "private",
      "protected", "public", "reinterpret_cast", "requires", "static_cast",
      "template", "this", "throw", "try", "typeid", "typename", "using",
      "virtual", "wchar_t", "xor", "xor_eq"};
  return set;
}

/// Object-like macros of the C headers a host includes beside the kernel's
/// (<stdint.h> is the header's own), the compilers' predefined ones, and
/// the types the header itself uses: a parameter so named would not parse.
/// (Other typedef names and function-like macros are valid parameter
/// names.)
const llvm::StringSet<> &objectMacros() {
  static const llvm::StringSet<> set = {
      "NULL", "EOF", "errno", "stdin", "stdout", "stderr", "INFINITY", "NAN",
      "HUGE_VAL", "HUGE_VALF", "EXIT_SUCCESS", "EXIT_FAILURE", "RAND_MAX",
      "BUFSIZ", "FILENAME_MAX", "CHAR_BIT", "CHAR_MAX", "CHAR_MIN", "INT_MAX",
      "INT_MIN", "UINT_MAX", "LONG_MAX", "LONG_MIN", "ULONG_MAX", "FLT_MAX",
      "FLT_MIN", "FLT_EPSILON", "DBL_MAX", "DBL_MIN", "DBL_EPSILON", "complex",
      "imaginary", "I", "noreturn",
      // predefined by GCC and Clang in their default gnu modes
      "unix", "linux", "i386",
      // the header's own types
      "int32_t"};
  return set;
}

/// <stdint.h>'s limit and constant macros: INT32_MAX, UINT8_C, SIZE_MAX,
/// INT_LEAST16_MIN, INTPTR_MAX, ...
bool isStdintMacro(llvm::StringRef name) {
  llvm::StringRef stem = name;
  if (!stem.consume_back("_MAX") && !stem.consume_back("_MIN") &&
      !stem.consume_back("_C"))
    return false;
  stem.consume_front("U");
  for (llvm::StringRef prefix :
       {"INT_LEAST", "INT_FAST", "INTPTR", "INTMAX", "INT", "SIZE", "PTRDIFF",
        "WCHAR", "WINT", "SIG_ATOMIC"})
    if (stem.consume_front(prefix))
      return stem.empty() || llvm::all_of(stem, llvm::isDigit);
  return false;
}

/// Functions of the C standard library (C11 and the math library) and the
/// few POSIX ones an object or its host may call: an exported kernel so
/// named would replace or clash with them at link time.
const llvm::StringSet<> &libraryFunctions() {
  static const llvm::StringSet<> set = {
      // stdlib.h
      "abort", "abs", "aligned_alloc", "at_quick_exit", "atexit", "atof",
      "atoi", "atol", "atoll", "bsearch", "calloc", "div", "exit", "_Exit",
      "free", "getenv", "labs", "ldiv", "llabs", "lldiv", "malloc", "mblen",
      "mbstowcs", "mbtowc", "posix_memalign", "qsort", "quick_exit", "rand",
      "realloc", "srand", "strtod", "strtof", "strtol", "strtold", "strtoll",
      "strtoul", "strtoull", "system", "wcstombs", "wctomb",
      // string.h
      "memchr", "memcmp", "memcpy", "memmove", "memset", "strcat", "strchr",
      "strcmp", "strcoll", "strcpy", "strcspn", "strerror", "strlen", "strncat",
      "strncmp", "strncpy", "strpbrk", "strrchr", "strspn", "strstr", "strtok",
      "strxfrm", "strdup",
      // stdio.h
      "clearerr", "fclose", "feof", "ferror", "fflush", "fgetc", "fgetpos",
      "fgets", "fopen", "fprintf", "fputc", "fputs", "fread", "freopen",
      "fscanf", "fseek", "fsetpos", "ftell", "fwrite", "getc", "getchar",
      "perror", "printf", "putc", "putchar", "puts", "remove", "rename",
      "rewind", "scanf", "setbuf", "setvbuf", "snprintf", "sprintf", "sscanf",
      "tmpfile", "tmpnam", "ungetc", "vfprintf", "vprintf", "vsnprintf",
      "vsprintf",
      // time.h, signal.h, setjmp.h, locale.h
      "asctime", "clock", "ctime", "difftime", "gmtime", "localtime", "mktime",
      "strftime", "time", "raise", "signal", "longjmp", "setjmp", "localeconv",
      "setlocale",
      // math.h (f32 and f64 forms of what kernels call)
      "acos", "acosf", "asin", "asinf", "atan", "atan2", "atan2f", "atanf",
      "cbrt", "cbrtf", "ceil", "ceilf", "cos", "cosf", "cosh", "coshf", "erf",
      "erff", "erfc", "erfcf", "exp", "exp2", "exp2f", "expf", "expm1",
      "expm1f", "fabs", "fabsf", "floor", "floorf", "fma", "fmaf", "fmax",
      "fmaxf", "fmin", "fminf", "fmod", "fmodf", "frexp", "hypot", "ldexp",
      "log", "log10", "log1p", "log1pf", "log2", "log2f", "logf", "lround",
      "modf", "nan", "nanf", "pow", "powf", "round", "roundf", "sin", "sinf",
      "sinh", "sinhf", "sqrt", "sqrtf", "tan", "tanf", "tanh", "tanhf", "trunc",
      "truncf",
      // math.h's function-like macros and more of libm
      "isnan", "isinf", "isfinite", "isnormal", "signbit", "fpclassify",
      "isgreater", "isless", "isunordered", "copysign", "copysignf", "rint",
      "rintf", "nearbyint", "lrint", "remainder", "scalbn",
      // ctype.h
      "isalnum", "isalpha", "isblank", "iscntrl", "isdigit", "isgraph",
      "islower", "isprint", "ispunct", "isspace", "isupper", "isxdigit",
      "tolower", "toupper",
      // POSIX: files, processes, threads, memory (libc exports them)
      "open", "close", "read", "write", "lseek", "pread", "pwrite", "dup",
      "pipe", "poll", "select", "ioctl", "fcntl", "stat", "fstat", "unlink",
      "access", "chdir", "getcwd", "fork", "execv", "execve", "kill", "wait",
      "waitpid", "sleep", "usleep", "nanosleep", "getpid", "index", "rindex",
      "bzero", "bcopy", "pthread_create", "pthread_join", "sched_yield", "mmap",
      "munmap", "mprotect", "sysconf", "dlopen", "dlsym", "dlclose", "main"};
  return set;
}

/// The C library of this machine that defines `name` (libc.so.6, or
/// libm.so.6 for the math functions), or null. The list above is what any
/// C library has; this is everything this one has (glibc's libc holds
/// libpthread, libdl and librt too), so a POSIX or GNU function the list
/// leaves out (sched_getaffinity, clock_gettime) is refused as well. Both
/// libraries are in every process that runs attnc (LLVM links libm), so
/// nothing is loaded: RTLD_NOLOAD only finds them.
const char *cLibraryDefining(llvm::StringRef name) {
#ifdef ATTNC_HAVE_DLSYM
  static void *const libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  static void *const libm = dlopen("libm.so.6", RTLD_LAZY | RTLD_NOLOAD);
  std::string symbol = name.str();
  if (libc && dlsym(libc, symbol.c_str()))
    return "libc.so.6";
  if (libm && dlsym(libm, symbol.c_str()))
    return "libm.so.6";
#endif
  return nullptr;
}

} // namespace

std::string mlir::attn::abi::cNameConflict(llvm::StringRef name, CNameUse use) {
  // The DSL's lexer only makes identifiers; hand-written IR can hold any
  // string (a newline and `#error`, `../`, a NUL byte).
  if (name.empty())
    return "is empty";
  if (llvm::isDigit(name.front()) ||
      !llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
    return "is not a C identifier (ASCII letters, digits and '_', not "
           "beginning with a digit)";
  if (use == CNameUse::MacroSuffix)
    return "";
  if (keywords().contains(name))
    return "is a C/C++ keyword";
  if (name.starts_with("__") ||
      (name.size() > 1 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z'))
    return "is reserved in C (it begins with '__' or '_' and a capital)";
  if (objectMacros().contains(name) || isStdintMacro(name))
    return "is a macro of the C headers or a type of the kernel's header";
  if (use == CNameUse::Function) {
    // File-scope names beginning with '_' are reserved in C; C++ reserves
    // every name with '__' anywhere.
    if (name.starts_with("_"))
      return "is reserved in C at file scope (it begins with '_')";
    if (name.contains("__"))
      return "is reserved in C++ (it contains '__')";
    if (libraryFunctions().contains(name))
      return "is a C library function, which an exported kernel of that "
             "name would replace";
    std::string reserved = reservedSymbolConflict(name);
    if (!reserved.empty())
      return reserved;
    if (const char *library = cLibraryDefining(name))
      return "is defined by the C library (" + std::string(library) +
             "), which an exported kernel of that name would replace in "
             "every program it is linked into";
  }
  return "";
}

std::string mlir::attn::abi::printableName(llvm::StringRef name) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::printEscapedString(name, os);
  return text;
}
