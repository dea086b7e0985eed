// The one source of AttncPch (cmake/AttncPch.cmake): the target exists to
// build the precompiled header the project's C++ targets reuse.
