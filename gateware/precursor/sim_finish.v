// Simulation-only end of run: when `valid` rises, write "<code> <cycles>" to FILENAME and stop
// the simulation ($finish). Progress: every 2^22 cycles the cycle count is rewritten into
// PROGRESS (a runner reads how far a simulation got, e.g. when it times out).
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
            $fwrite(pfd, "%0d\n", cycles);
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
