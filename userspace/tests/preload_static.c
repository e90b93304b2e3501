// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/* A statically linked program for preload_test: exits with its argument. */
#include <stdlib.h>

int main(int argc, char **argv)
{
	return argc > 1 ? atoi(argv[1]) : 0;
}
