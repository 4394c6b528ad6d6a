// Simulation-only end of run: when `valid` rises, write "<code> <cycles>" to FILENAME and stop
// the simulation ($finish). Progress: every 2^22 cycles "<cycles> pc=<pc> priv=<p> asid=<a>"
// is rewritten into PROGRESS: how far a simulation got and where the CPU is (the PC of the
// instruction in write-back, the privilege level, satp's ASID = the Xous PID), read by the
// runner when a run times out. The CPU state is read by hierarchical reference into the
// VexRiscv instance (simulation only).
module sim_finish #(parameter FILENAME = "finish.txt", parameter PROGRESS = "progress.txt") (
    input wire        clk,
    input wire        valid,
    input wire [31:0] code,
    input wire [63:0] cycles
);
    integer fd;
    integer pfd;
    always @(posedge clk) begin
        if (cycles[21:0] == 22'd0) begin
            pfd = $fopen(PROGRESS, "w");
            $fwrite(pfd, "%0d pc=%08x priv=%0d asid=%0d\n", cycles, sim.VexRiscv.memory_to_writeBack_PC,
                    sim.VexRiscv.CsrPlugin_privilege, sim.VexRiscv.MmuPlugin_satp_asid);
            $fclose(pfd);
        end
        if (valid) begin
            fd = $fopen(FILENAME, "w");
            $fwrite(fd, "%0d %0d\n", code, cycles);
            $fclose(fd);
            $finish;
        end
    end
endmodule
