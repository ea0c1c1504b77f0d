/* plugin_discovery.c - ct_backend_discover: loads every plugin on a search path (by default
 * CTENSOR_PLUGIN_PATH, then the ctensor-plugins directory beside libctensor), in sorted order
 * within each directory so that the table (and which kernel is newest) is the same every run. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

#if defined(_WIN32)
#define CT_PATH_SEPARATOR ';'
#else
#define CT_PATH_SEPARATOR ':'
#endif

/* Name of the directory beside the library where the package installs its plugins. */
#define CT_PLUGIN_DIRECTORY "ctensor-plugins"

static bool ct_is_plugin_file_name(const char* name) {
  static const char* const suffixes[] = {".so", ".dylib", ".dll"};
  const size_t length = strlen(name);
  for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; ++i) {
    const size_t n = strlen(suffixes[i]);
    if (length > n && strcmp(name + length - n, suffixes[i]) == 0) return true;
  }
  return false;
}

static int ct_compare_strings(const void* a, const void* b) {
  return strcmp(*(const char* const*)a, *(const char* const*)b);
}

/* Loads one plugin; counts it when it ends up loaded (now or by an earlier call). */
static void ct_discover_file(const char* path, int32_t* loaded) {
  if (ct_backend_load(path, NULL) == CT_OK) ++*loaded;
}

/* Loads every plugin file of a directory, in name order. Unreadable directories are skipped. */
static int ct_discover_directory(const char* directory, int32_t* loaded) {
  DIR* dir = opendir(directory);
  if (!dir) return CT_OK;
  char** names = NULL;
  size_t count = 0, capacity = 0;
  int status = CT_OK;
  for (struct dirent* item = readdir(dir); item && status == CT_OK; item = readdir(dir)) {
    if (!ct_is_plugin_file_name(item->d_name)) continue;
    if (count == capacity) {
      capacity = capacity ? capacity * 2 : 16;
      char** grown = realloc(names, sizeof(char*) * capacity);
      if (!grown) {
        status = ct_set_error(CT_ERROR_OUT_OF_MEMORY, "ct_backend_discover: out of memory");
        break;
      }
      names = grown;
    }
    const size_t length = strlen(directory) + 1 + strlen(item->d_name) + 1;
    names[count] = malloc(length);
    if (!names[count]) {
      status = ct_set_error(CT_ERROR_OUT_OF_MEMORY, "ct_backend_discover: out of memory");
      break;
    }
    snprintf(names[count], length, "%s/%s", directory, item->d_name);
    ++count;
  }
  closedir(dir);
  if (status == CT_OK && count > 1) qsort(names, count, sizeof(char*), ct_compare_strings);
  for (size_t i = 0; i < count; ++i) {
    struct stat info;
    if (status == CT_OK && stat(names[i], &info) == 0 && S_ISREG(info.st_mode)) {
      ct_discover_file(names[i], loaded);
    }
    free(names[i]);
  }
  free(names);
  return status;
}

/* One search path entry: a directory or a plugin file; anything else is skipped. */
static int ct_discover_entry(const char* entry, int32_t* loaded) {
  struct stat info;
  if (!entry[0] || stat(entry, &info) != 0) return CT_OK;
  if (S_ISDIR(info.st_mode)) return ct_discover_directory(entry, loaded);
  if (S_ISREG(info.st_mode)) ct_discover_file(entry, loaded);
  return CT_OK;
}

static int ct_discover_path(const char* search_path, int32_t* loaded) {
  char* copy = strdup(search_path);
  if (!copy) return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "ct_backend_discover: out of memory");
  int status = CT_OK;
  char* start = copy;
  while (status == CT_OK) {
    char* end = strchr(start, CT_PATH_SEPARATOR);
    if (end) *end = '\0';
    status = ct_discover_entry(start, loaded);
    if (!end) break;
    start = end + 1;
  }
  free(copy);
  return status;
}

/* The ctensor-plugins directory beside this library, or "" when it cannot be found. */
static void ct_default_plugin_directory(char* buffer, size_t size) {
  buffer[0] = '\0';
  Dl_info info;
  if (!dladdr((const void*)&ct_backend_discover, &info) || !info.dli_fname) return;
  const char* slash = strrchr(info.dli_fname, '/');
  if (!slash) return;
  const int n = snprintf(buffer, size, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
                         CT_PLUGIN_DIRECTORY);
  if (n < 0 || (size_t)n >= size) buffer[0] = '\0';
}

int ct_backend_discover(const char* search_path, int32_t* loaded) {
  ct_clear_error();
  int status = ct_registry_init();
  if (status != CT_OK) return status;
  int32_t count = 0;
  if (search_path) {
    status = ct_discover_path(search_path, &count);
  } else {
    const char* environment = getenv("CTENSOR_PLUGIN_PATH");
    if (environment) status = ct_discover_path(environment, &count);
    char directory[4096];
    ct_default_plugin_directory(directory, sizeof directory);
    if (status == CT_OK && directory[0]) status = ct_discover_entry(directory, &count);
  }
  if (loaded) *loaded = count;
  if (status == CT_OK) ct_clear_error(); /* failed plugins are in the table, not errors */
  return status;
}
