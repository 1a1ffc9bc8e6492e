#!/usr/bin/env bash
# Size report of a firmware image (Cortex-M or RISC-V): its sections (GNU
# `size -A`), then its code split by the crate each function symbol belongs
# to (GNU `nm -S -C`;
# a generic function is counted where it is defined, e.g. the core's
# `Device<Null>` methods under streamcore; code the optimizer inlined into
# a caller counts with the caller), then every static.
set -euo pipefail
elf="$1"
size -A "$elf" | awk '
    $1 ~ /^\.(vector_table|text|rodata|data|bss)$/ { s[$1] = $2; printf "  %-14s %8d B\n", $1, $2 }
    END {
        printf "  flash (.vector_table+.text+.rodata+.data) %d B; static RAM (.data+.bss) %d B\n",
            s[".vector_table"] + s[".text"] + s[".rodata"] + s[".data"], s[".data"] + s[".bss"]
    }'
text=$(size -A "$elf" | awk '$1 == ".text" { print $2 }')
echo "  .text by crate (function symbol sizes):"
nm -S -C -t d "$elf" | awk '
    # Lines: address size type name...; keep code symbols with a size.
    NF >= 4 && $3 ~ /^[tTwW]$/ {
        name = $4; for (i = 5; i <= NF; i++) name = name " " $i
        sub(/^[<&*]+/, "", name); sub(/^(mut |dyn )/, "", name)
        crate = name; sub(/::.*/, "", crate); sub(/[< ].*/, "", crate)
        if (crate == "streamcore") group = "streamcore (the core)"
        else if (crate ~ /^(hashbrown|heapless|spin|bitflags|hash32|stable_deref_trait|byteorder)$/) group = "core dependency " crate
        else if (crate ~ /^(core|alloc)$/) group = "Rust core + alloc"
        else if (crate == "__rustc") group = "the check (scenario, allocator, start-up)"
        else if (crate == "compiler_builtins" || name ~ /^__/) group = "compiler builtins"
        else group = "the check (scenario, allocator, start-up)"
        by[group] += $2 + 0
    }
    END { for (g in by) printf "    %-44s %8d B\n", g, by[g] }' | sort
echo "  (.text holds $text B; the rest is alignment padding)"
echo "  statics:"
nm -S -C -t d "$elf" | awk '
    NF >= 4 && $3 ~ /^[dDbB]$/ {
        name = $4; for (i = 5; i <= NF; i++) name = name " " $i
        printf "    %-44s %8d B\n", name, $2 + 0
    }'
