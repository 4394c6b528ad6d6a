// Simulation-only source of the simulated Precursor's debug UART: the bytes typed on it, read from
// the file named by the plusarg +keys=<path> as the file grows (the host appends to it while the
// simulation runs). One byte every PERIOD cycles (115200 baud at the declared clock), held while
// the receiver is not ready (its FIFO is full). Without the plusarg nothing is ever typed. Each
// byte handed over is logged to LOGNAME as "<cycle> <hex>".
module sim_key_source #(parameter LOGNAME = "keys.log", parameter PERIOD = 8680) (
    input wire        clk,
    input wire        ready,
    output reg        valid,
    output reg [7:0]  data,
    input wire [63:0] cycles
);
    integer fd, logfd, c, r, wait_cycles;
    reg [8*1024-1:0] path;
    initial begin
        valid = 1'b0;
        data = 8'h00;
        wait_cycles = PERIOD;
        fd = 0;
        if ($value$plusargs("keys=%s", path)) fd = $fopen(path, "r");
        logfd = $fopen(LOGNAME, "w");
    end
    always @(posedge clk) begin
        valid <= 1'b0;
        if (wait_cycles != 0) begin
            wait_cycles <= wait_cycles - 1;
        end else if (fd != 0 && ready) begin
            c = $fgetc(fd);
            if (c >= 0) begin
                valid <= 1'b1;
                data <= c[7:0];
                $fwrite(logfd, "%0d %02x\n", cycles, c[7:0]);
                $fflush(logfd);
            end else begin
                // end of the file for now: clear the end-of-file state and look again later
                r = $fseek(fd, 0, 1);
            end
            wait_cycles <= PERIOD - 1;
        end
    end
endmodule
