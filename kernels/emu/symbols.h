// Finds static __shared__ variables and kernel names in the ELF symbol tables of the program.
//
// The emulator fills static __shared__ memory with 0xFF at the start of every block, so it must
// know every such variable's address and size. `__shared__` can only prefix a declaration, so it
// cannot register the variable it declares; and GCC ignores `section` attributes on static
// locals of templates (each lands in its own COMDAT section), which rules out collecting them in
// one linker section. Instead `__shared__` (cuda_emu.h) adds abi_tag(MCDL_EMU_SHARED_TAG), which
// puts a marker into the variable's mangled name, and the first launch looks those symbols up in
// the .symtab of every loaded object. Only a stripped program lacks it; that is an error rather
// than silently unpoisoned memory.
#pragma once
#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "error.h"

#define MCDL_EMU_SHARED_TAG "mcdl_emu_shared"

namespace mcdl::emu::detail {

// How the tag appears in a mangled name: B<length><tag>.
inline constexpr char shared_tag_mangled[] = "B15" MCDL_EMU_SHARED_TAG;

struct Symbol {
  const char* name;
  unsigned type;  // STT_OBJECT, STT_FUNC, ...
  uintptr_t address;
  size_t size;
};

// Calls visit(symbol) for each defined symbol in the .symtab of the ELF file at `path`, loaded at
// `bias`. Returns whether the file has a .symtab.
template <class Visit>
bool scan_symbol_table(const char* path, uintptr_t bias, Visit& visit) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat status {};
  void* mapping = MAP_FAILED;
  if (fstat(fd, &status) == 0 && status.st_size > 0)
    mapping = mmap(nullptr, static_cast<size_t>(status.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (mapping == MAP_FAILED) return false;
  const size_t size = static_cast<size_t>(status.st_size);
  const auto* bytes = static_cast<const unsigned char*>(mapping);
  const auto* header = static_cast<const ElfW(Ehdr)*>(mapping);
  const unsigned char elf_class = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
  bool has_symtab = false;
  if (size >= sizeof(ElfW(Ehdr)) && std::memcmp(header->e_ident, ELFMAG, SELFMAG) == 0 &&
      header->e_ident[EI_CLASS] == elf_class &&
      header->e_shoff + size_t{header->e_shnum} * sizeof(ElfW(Shdr)) <= size) {
    const auto* sections = reinterpret_cast<const ElfW(Shdr)*>(bytes + header->e_shoff);
    for (unsigned s = 0; s < header->e_shnum; ++s) {
      const ElfW(Shdr)& table = sections[s];
      if (table.sh_type != SHT_SYMTAB || table.sh_link >= header->e_shnum) continue;
      const ElfW(Shdr)& strings = sections[table.sh_link];
      if (table.sh_offset + table.sh_size > size || strings.sh_offset + strings.sh_size > size) continue;
      has_symtab = true;
      const auto* symbols = reinterpret_cast<const ElfW(Sym)*>(bytes + table.sh_offset);
      const auto* names = reinterpret_cast<const char*>(bytes + strings.sh_offset);
      for (size_t i = 0; i < table.sh_size / sizeof(ElfW(Sym)); ++i) {
        const ElfW(Sym)& symbol = symbols[i];
        if (symbol.st_shndx == SHN_UNDEF || symbol.st_name >= strings.sh_size) continue;
        visit(Symbol{names + symbol.st_name, ELF64_ST_TYPE(symbol.st_info), bias + symbol.st_value,
                     static_cast<size_t>(symbol.st_size)});
      }
    }
  }
  munmap(mapping, size);
  return has_symtab;
}

// Visits the symbols of the main program and of every loaded shared object. Returns false when
// the main program has no .symtab.
template <class Visit>
bool for_each_symbol(Visit visit) {
  struct Scan {
    Visit* visit;
    bool main_has_symtab;
  } scan{&visit, false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto& scan = *static_cast<Scan*>(data);
        const bool is_main = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
        const bool has_symtab =
            scan_symbol_table(is_main ? "/proc/self/exe" : info->dlpi_name, info->dlpi_addr, *scan.visit);
        if (is_main) scan.main_has_symtab = has_symtab;
        return 0;
      },
      &scan);
  return scan.main_has_symtab;
}

struct MemoryRegion {
  unsigned char* data;
  size_t size;
};

inline std::vector<MemoryRegion> find_static_shared_variables() {
  std::vector<MemoryRegion> regions;
  const bool found_symtab = for_each_symbol([&](const Symbol& symbol) {
    // _ZGV... is the guard variable of a static with a dynamic initialiser, not shared memory.
    if (symbol.type == STT_OBJECT && symbol.size > 0 && std::strncmp(symbol.name, "_ZGV", 4) != 0 &&
        std::strstr(symbol.name, shared_tag_mangled) != nullptr)
      regions.push_back({reinterpret_cast<unsigned char*>(symbol.address), symbol.size});
  });
  if (!found_symtab)
    throw EmulationError(
        "mcdl::emu: the program has no symbol table (stripped?), so the emulator cannot find the "
        "static __shared__ variables it must fill with 0xFF at the start of each block");
  std::sort(regions.begin(), regions.end(), [](auto& a, auto& b) { return a.data < b.data; });
  regions.erase(std::unique(regions.begin(), regions.end(), [](auto& a, auto& b) { return a.data == b.data; }),
                regions.end());
  return regions;
}

// Every static __shared__ variable in the program, found once (objects loaded later are missed).
inline const std::vector<MemoryRegion>& static_shared_variables() {
  static const std::vector<MemoryRegion> regions = find_static_shared_variables();
  return regions;
}

// The demangled name of the function at `address`, for error messages.
inline std::string function_name(uintptr_t address) {
  std::string name;
  for_each_symbol([&](const Symbol& symbol) {
    if (name.empty() && symbol.type == STT_FUNC && symbol.address == address) name = symbol.name;
  });
  if (name.empty()) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "at %#jx", static_cast<uintmax_t>(address));
    return buffer;
  }
  int status = 0;
  char* demangled = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status == 0) name = demangled;
  std::free(demangled);
  return name;
}

}  // namespace mcdl::emu::detail
