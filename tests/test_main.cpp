// The test runner: doctest's main. Suites live next to this file, one per source folder.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
