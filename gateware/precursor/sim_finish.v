// Simulation-only end of run: when `valid` rises, write "<code> <cycles>" to FILENAME and stop
// the simulation ($finish). Progress: every 2^22 cycles "<cycles> pc=<pc> priv=<p> asid=<a>"
// is rewritten into PROGRESS: how far a simulation got and where the CPU is (the PC of the
// instruction in write-back, the privilege level, satp's ASID = the Xous PID), read by the
// runner when a run times out. The CPU state is read by hierarchical reference into the
// VexRiscv instance (simulation only).
// Profile: with the plusarg `+profile=<P>` (P > 0 cycles) the same CPU state is appended to
// PROFILE every P cycles, one sample per line: "<cycles> <pc hex> <priv> <asid>" (a statistical
// PC profiler of the whole system: kernel and every process; read by `cargo xtask sim-profile`).
module sim_finish #(parameter FILENAME = "finish.txt", parameter PROGRESS = "progress.txt", parameter PROFILE = "profile.txt") (
    input wire        clk,
    input wire        valid,
    input wire [31:0] code,
    input wire [63:0] cycles
);
    integer fd;
    integer pfd;
    integer prof_fd;
    reg [31:0] prof_period;
    reg [31:0] prof_count;
    initial begin
        if (!$value$plusargs("profile=%d", prof_period)) prof_period = 0;
        prof_count = 0;
        if (prof_period != 0) prof_fd = $fopen(PROFILE, "w");
    end
    always @(posedge clk) begin
        if (prof_period != 0) begin
            if (prof_count + 1 >= prof_period) begin
                prof_count <= 0;
                $fwrite(prof_fd, "%0d %08x %0d %0d\n", cycles, sim.VexRiscv.memory_to_writeBack_PC,
                        sim.VexRiscv.CsrPlugin_privilege, sim.VexRiscv.MmuPlugin_satp_asid);
            end else begin
                prof_count <= prof_count + 1;
            end
        end
        if (cycles[21:0] == 22'd0) begin
            pfd = $fopen(PROGRESS, "w");
            $fwrite(pfd, "%0d pc=%08x priv=%0d asid=%0d\n", cycles, sim.VexRiscv.memory_to_writeBack_PC,
                    sim.VexRiscv.CsrPlugin_privilege, sim.VexRiscv.MmuPlugin_satp_asid);
            $fclose(pfd);
            if (prof_period != 0) $fflush(prof_fd);
        end
        if (valid) begin
            if (prof_period != 0) $fflush(prof_fd);
            fd = $fopen(FILENAME, "w");
            $fwrite(fd, "%0d %0d\n", code, cycles);
            $fclose(fd);
            $finish;
        end
    end
endmodule
