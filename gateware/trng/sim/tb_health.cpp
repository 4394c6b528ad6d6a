// Verilator test bench of one source's health tests (gateware/trng/health.py through
// verilator.py's HealthTop wrapper): one sample per cycle; the fail outputs are sampled in the
// sample's cycle, before the clock edge.
//
// stdin:  RCT APT WINDOW STARTUP N s0 s1 ...
// stdout: "F i rct|apt" per failure, "STARTUP 0|1" at the end
#include <cstdint>
#include <cstdio>
#include "VHealthTop.h"
#include "verilated.h"

int main(int argc, char** argv) {
    Verilated::commandArgs(argc, argv);
    VHealthTop* top = new VHealthTop;
    unsigned rct, apt, win, st, n;
    if (scanf("%u %u %u %u %u", &rct, &apt, &win, &st, &n) != 5) return 2;
    auto tick = [&]() { top->sys_clk = 1; top->eval(); top->sys_clk = 0; top->eval(); };
    top->sys_rst = 1; top->sys_clk = 0; top->eval(); tick(); top->sys_rst = 0;
    top->rct_cutoff = rct; top->apt_cutoff = apt; top->apt_window = win; top->startup = st;
    top->valid = 0; tick(); tick();
    for (unsigned i = 0; i < n; i++) {
        unsigned s;
        if (scanf("%u", &s) != 1) return 2;
        top->sample = s; top->valid = 1;
        top->eval();
        if (top->rct_fail) printf("F %u rct\n", i);
        if (top->apt_fail) printf("F %u apt\n", i);
        tick();
    }
    top->valid = 0; tick();
    printf("STARTUP %d\n", top->startup_done ? 1 : 0);
    top->final();
    delete top;
    return 0;
}
