/* Links the no_std static library into a C program and runs the core in it. */
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
uint32_t streamcore_nostd_smoke(void);
uint32_t streamcore_nostd_expected(void);
size_t streamcore_nostd_heap_peak(void);
size_t streamcore_nostd_heap_used(void);
/* The prebuilt `alloc` crate names an unwinding personality; with
 * panic=abort it is never called. */
void rust_eh_personality(void) {}
int main(void) {
    uint32_t got = streamcore_nostd_smoke();
    uint32_t expected = streamcore_nostd_expected();
    if (got != expected) {
        fprintf(stderr, "no_std smoke returned %u, expected %u\n", got, expected);
        return 1;
    }
    printf("no_std smoke: ok (wait planned, capture sealed, device API round trip on the null platform); "
           "heap peak %zu B live, %zu B allocated in all\n",
           streamcore_nostd_heap_peak(), streamcore_nostd_heap_used());
    return 0;
}
