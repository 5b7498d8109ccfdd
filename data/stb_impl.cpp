// The single compiled copy of stb_image and stb_image_write (header-only libraries from libstb-dev).
// Their code is third-party C: its warnings are silenced here so -Werror applies to ours only.
#include <cstdlib>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
// Zeroed allocations: a reader that leaves part of an image unwritten on a corrupt file (data/
// decode.cpp refuses the cases known) gives zeros, never another allocation's leftovers.
#define STBI_MALLOC(size) std::calloc(1, size)
#define STBI_REALLOC(pointer, size) std::realloc(pointer, size)
#define STBI_FREE(pointer) std::free(pointer)
// Radiance HDR: its reader decodes into an uninitialised buffer without checking the read, and
// no dataset (nor Pillow, the references' decoder) uses it.
#define STBI_NO_HDR
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop
