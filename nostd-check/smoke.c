/* Links the no_std static library into a C program and runs the core in it. */
#include <stdio.h>
#include <stdint.h>
uint32_t streamcore_nostd_smoke(void);
/* The prebuilt `alloc` crate names an unwinding personality; with
 * panic=abort it is never called. */
void rust_eh_personality(void) {}
int main(void) {
    uint32_t got = streamcore_nostd_smoke();
    if (got != 3) {
        fprintf(stderr, "no_std smoke returned %u, expected 3\n", got);
        return 1;
    }
    puts("no_std smoke: ok (wait planned, capture sealed, device API round trip on the null platform)");
    return 0;
}
