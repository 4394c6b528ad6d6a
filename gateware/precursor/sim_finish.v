// Simulation-only end of run: when `valid` rises, write "<code> <cycles>" to FILENAME and stop
// the simulation ($finish).
module sim_finish #(parameter FILENAME = "finish.txt") (
    input wire        clk,
    input wire        valid,
    input wire [31:0] code,
    input wire [63:0] cycles
);
    integer fd;
    always @(posedge clk) begin
        if (valid) begin
            fd = $fopen(FILENAME, "w");
            $fwrite(fd, "%0d %0d\n", code, cycles);
            $fclose(fd);
            $finish;
        end
    end
endmodule
