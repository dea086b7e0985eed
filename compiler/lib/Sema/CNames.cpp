//===- CNames.cpp - Names that reach the C interface of a kernel ----------===//

#include "attnc/Sema/CNames.h"

#include "llvm/ADT/StringSet.h"

using namespace attnc;

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

/// Macros and types that <stdint.h> and the usual C headers a host
/// includes beside the kernel's define: a parameter so named would not
/// parse, or would change meaning.
const llvm::StringSet<> &macrosAndTypes() {
  static const llvm::StringSet<> set = {
      "NULL",          "EOF",          "errno",        "assert",   "offsetof",
      "stdin",         "stdout",       "stderr",       "INFINITY", "NAN",
      "HUGE_VAL",      "EXIT_SUCCESS", "EXIT_FAILURE", "RAND_MAX", "BUFSIZ",
      "FILE",          "size_t",       "ptrdiff_t",    "wchar_t",  "intptr_t",
      "uintptr_t",     "intmax_t",     "uintmax_t",    "int8_t",   "int16_t",
      "int32_t",       "int64_t",      "uint8_t",      "uint16_t", "uint32_t",
      "uint64_t",      "complex",      "imaginary",    "I",        "noreturn",
      "static_assert", "alignas",      "alignof"};
  return set;
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
      // POSIX threads and memory the runtime and parallel objects use
      "pthread_create", "pthread_join", "sched_yield", "mmap", "munmap",
      "main"};
  return set;
}

} // namespace

std::string attnc::cNameConflict(llvm::StringRef name, CNameUse use) {
  if (keywords().contains(name))
    return "is a C/C++ keyword";
  if (name.starts_with("__") ||
      (name.size() > 1 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z'))
    return "is reserved in C (it begins with '__' or '_' and a capital)";
  if (macrosAndTypes().contains(name))
    return "is a macro or type of the C library";
  if (use == CNameUse::Function) {
    if (libraryFunctions().contains(name))
      return "is a C library function, which an exported kernel of that "
             "name would replace";
    if (name.starts_with("attnc_"))
      return "begins with 'attnc_', the prefix of attnc's runtime "
             "functions";
  }
  return "";
}
