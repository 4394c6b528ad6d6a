// Simulation-only panel of the simulated Precursor's memory LCD: every line the memlcd block
// sends is appended to a file as "<cycle> <line> <words 10..0 as 88 hex digits>", so the host
// can rebuild what the panel shows (run.py --memlcd, cargo xtask sim-screenshot).
module sim_memlcd_sink #(parameter FILENAME = "memlcd.log") (
    input wire         clk,
    input wire         valid,
    input wire [9:0]   line,
    input wire [351:0] data,
    input wire [63:0]  cycles
);
    integer fd;
    initial fd = $fopen(FILENAME, "w");
    always @(posedge clk) begin
        if (valid) begin
            $fwrite(fd, "%0d %0d %088h\n", cycles, line, data);
            $fflush(fd);
        end
    end
endmodule
