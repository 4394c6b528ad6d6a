// Verilator test bench of the TRNG conditioner (gateware/trng/conditioner.py through
// verilator.py's CondTop wrapper). Same protocol as the Migen bench (harness.py): raw words are
// offered one per cycle, user seeds tagged with raw index j are written (one per cycle) before
// word j is offered, and the two urandom ports are read following a pattern. Port values are
// sampled in the cycle of the read, before the clock edge that consumes them.
//
// stdin:  RI SI SE WANT PATTERN MAXCYCLES POISON
//         NRAW w0 w1 ...
//         NSEEDS (j w)...
// stdout: "K w" / "S w" per valid read, "HELDK w" / "HELDS w", "RAW n", "CYCLES n",
//         "MAXINV k s", "POISON 0|1", "FIRST c", "LAST c"
#include <cstdint>
#include <cstdio>
#include <map>
#include <vector>
#include "VCondTop.h"
#include "verilated.h"

static VCondTop* top;
static uint64_t cycles = 0;

static void tick() {
    top->sys_clk = 1;
    top->eval();
    top->sys_clk = 0;
    top->eval();
    cycles++;
}

static bool pattern(int id, uint64_t c, int port) {
    switch (id) {
    case 0: return port == 0;
    case 1: return port == 0 ? c % 3 == 0 : c % 5 == 0;
    case 2: return port == 1 && c % 7 == 0;
    default: return port == 0;
    }
}

int main(int argc, char** argv) {
    Verilated::commandArgs(argc, argv);
    top = new VCondTop;
    unsigned ri, si, se, want, pat, poison;
    unsigned long long maxc;
    if (scanf("%u %u %u %u %u %llu %u", &ri, &si, &se, &want, &pat, &maxc, &poison) != 7) return 2;
    unsigned nraw;
    if (scanf("%u", &nraw) != 1) return 2;
    std::vector<uint32_t> raw(nraw);
    for (auto& w : raw) if (scanf("%u", &w) != 1) return 2;
    unsigned nseeds;
    if (scanf("%u", &nseeds) != 1) return 2;
    std::map<unsigned, std::vector<uint32_t>> seeds;
    for (unsigned i = 0; i < nseeds; i++) {
        unsigned j, w;
        if (scanf("%u %u", &j, &w) != 2) return 2;
        seeds[j].push_back(w);
    }
    top->sys_rst = 1; top->sys_clk = 0; top->eval(); tick(); top->sys_rst = 0; cycles = 0;
    top->reseed_interval = ri; top->selfmix_interval = si; top->selfmix_ena = se;
    unsigned total = 0, held = 0, raw_used = 0;
    unsigned maxinv[2] = {0, 0}, run[2] = {0, 0};
    bool poison_ok = true, started = false;
    long long first = -1, last = -1;
    uint32_t heldw[2]; bool hasheld[2] = {false, false};
    std::map<unsigned, bool> seeded;
    while (total + held < want && cycles < maxc) {
        unsigned j = raw_used;
        if (seeds.count(j) && !seeded[j]) {
            top->raw_valid = 0; top->k_rd = 0; top->s_rd = 0;
            for (uint32_t w : seeds[j]) { top->seed_data = w; top->seed_we = 1; tick(); }
            top->seed_we = 0;
            seeded[j] = true;
        }
        top->raw_valid = j < nraw; top->raw_data = j < nraw ? raw[j] : 0;
        bool rk = pattern(pat, cycles, 0), rs = pattern(pat, cycles, 1);
        top->k_rd = rk; top->s_rd = rs;
        top->eval();
        bool ready = top->raw_ready;
        bool rd[2] = {rk, rs};
        bool v[2] = {(bool)top->k_valid, (bool)top->s_valid};
        uint32_t d[2] = {top->k_dout, top->s_dout};
        uint32_t w[2] = {top->k_word, top->s_word};
        tick();
        if (ready && top->raw_valid) raw_used++;
        held = 0;
        for (int p = 0; p < 2; p++) {
            if (!rd[p]) {
                hasheld[p] = v[p]; heldw[p] = w[p]; held += v[p];
                continue;
            }
            if (v[p]) {
                printf("%c %u\n", p ? 'S' : 'K', d[p]);
                total++; run[p] = 0;
                if (first < 0) first = cycles;
                last = cycles; started = true;
            } else {
                poison_ok &= d[p] == poison;
                if (started) { run[p]++; if (run[p] > maxinv[p]) maxinv[p] = run[p]; }
            }
        }
    }
    for (int p = 0; p < 2; p++) if (hasheld[p]) printf("HELD%c %u\n", p ? 'S' : 'K', heldw[p]);
    printf("RAW %u\nCYCLES %llu\nMAXINV %u %u\nPOISON %d\nFIRST %lld\nLAST %lld\n", raw_used,
           (unsigned long long)cycles, maxinv[0], maxinv[1], poison_ok ? 1 : 0, first, last);
    top->final();
    delete top;
    return 0;
}
