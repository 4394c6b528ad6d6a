// Simulation-only byte sink for the simulated Precursor's UARTs: every byte the CPU writes to a
// UART's RXTX register is appended to a file. The first byte of each line is preceded by the
// cycle count at which it was written ("<cycle> "), so a host-side runner can time each line in
// simulated cycles.
module sim_uart_sink #(parameter FILENAME = "uart.log") (
    input wire        clk,
    input wire        valid,
    input wire [7:0]  data,
    input wire [63:0] cycles
);
    integer fd;
    reg at_line_start;
    initial begin
        fd = $fopen(FILENAME, "w");
        at_line_start = 1'b1;
    end
    always @(posedge clk) begin
        if (valid) begin
            if (at_line_start) $fwrite(fd, "%0d ", cycles);
            $fwrite(fd, "%c", data);
            at_line_start <= (data == 8'h0a);
            if (data == 8'h0a) $fflush(fd);
        end
    end
endmodule
