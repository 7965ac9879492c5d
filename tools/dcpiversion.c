/*
 * dcpiversion - print the dcpi version of the tools and of the library they run with.
 */
#include <stdio.h>
#include "dcpi/version.h"

int main(void)
{
    printf("dcpi %s (library %s)\n", DCPI_VERSION_STRING, dcpi_version_string());
    return dcpi_version() == DCPI_VERSION_HEX ? 0 : 1;
}
