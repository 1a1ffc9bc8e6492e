/* Links the no_std static library into a C program and runs the core in it. */
#include <stdio.h>
#include <stdint.h>
uint32_t streamcore_nostd_smoke(void);
/* The prebuilt `alloc` crate names an unwinding personality; with
 * panic=abort it is never called. */
void rust_eh_personality(void) {}
int main(void) {
    uint32_t got = streamcore_nostd_smoke();
    if (got != 2) {
        fprintf(stderr, "no_std smoke returned %u, expected 2\n", got);
        return 1;
    }
    puts("no_std smoke: ok (1 cross-stream wait planned, capture sealed)");
    return 0;
}
