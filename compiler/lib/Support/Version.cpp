//===- Version.cpp - attnc's version and its git commit -------------------===//

#include "attnc/Support/Version.h"

#include "attnc/VersionInfo.inc"

const char *attnc::version() { return ATTNC_VERSION; }

const char *attnc::gitCommit() { return ATTNC_GIT_COMMIT; }
