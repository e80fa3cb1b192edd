// SPDX-License-Identifier: Apache-2.0
// qo_sbox_rom: two AES S-box lookups in one block RAM, with the RAM's output
// register: an address taken at one clock edge gives its byte at the output
// after the next one (two clocks of latency, a new lookup every clock).
//
// Why the output register: an ECP5 DP16KD without it (REGMODE NOREG, what
// Yosys's memory mapping always makes) has a clock-to-out of 5.6 ns in
// nextpnr's timing model, more than half of a 10 ns clock before any routing
// (docs/hw.md, "What 100 MHz takes"); with it the data leaves a register at
// the RAM. Yosys does not map a memory read into that register, so on ECP5
// (QO_ECP5_PRIMS, set by tools/hw.sh's synthesis) the RAM is instantiated
// directly; elsewhere (simulation, other devices) the same behaviour is a ROM
// with two registers.
module qo_sbox_rom (
    input  wire       clk,
    input  wire [7:0] a,
    input  wire [7:0] b,
    output wire [7:0] qa,
    output wire [7:0] qb
);
`include "qo_aes_round.vh"
`ifdef QO_ECP5_PRIMS
    // INITVAL_k: 18-bit words 16k..16k+15 of the RAM in 20-bit fields; with
    // 9-bit ports entry 2w is bits [8:0] of word w and entry 2w+1 bits
    // [17:9] (the layout Yosys's own mapping of this ROM gives, checked
    // against its INITVAL_00 when this was written)
    function [319:0] initval;
        input integer k;
        integer i;
        begin
            initval = 320'h0;
            for (i = 0; i < 16; i = i + 1)
                initval[20*i +: 18] = {1'b0, QO_SBOX_TAB[8*(32*k + 2*i + 1) +: 8],
                                       1'b0, QO_SBOX_TAB[8*(32*k + 2*i) +: 8]};
        end
    endfunction
    wire [17:0] doa, dob;
    DP16KD #(
        .INITVAL_00(initval(0)), .INITVAL_01(initval(1)), .INITVAL_02(initval(2)),
        .INITVAL_03(initval(3)), .INITVAL_04(initval(4)), .INITVAL_05(initval(5)),
        .INITVAL_06(initval(6)), .INITVAL_07(initval(7)),
        .DATA_WIDTH_A(9), .DATA_WIDTH_B(9), .REGMODE_A("OUTREG"), .REGMODE_B("OUTREG"),
        .CSDECODE_A("0b000"), .CSDECODE_B("0b000"), .WRITEMODE_A("NORMAL"),
        .WRITEMODE_B("NORMAL"), .GSR("DISABLED")
    ) ram (
        .CLKA(clk), .CEA(1'b1), .OCEA(1'b1), .WEA(1'b0), .RSTA(1'b0),
        .CSA0(1'b0), .CSA1(1'b0), .CSA2(1'b0),
        // 9-bit port: the address is ADA[13:3]; 256 entries use ADA[10:3]
        .ADA0(1'b0), .ADA1(1'b0), .ADA2(1'b0), .ADA3(a[0]), .ADA4(a[1]), .ADA5(a[2]),
        .ADA6(a[3]), .ADA7(a[4]), .ADA8(a[5]), .ADA9(a[6]), .ADA10(a[7]), .ADA11(1'b0),
        .ADA12(1'b0), .ADA13(1'b0),
        .DIA0(1'b0), .DIA1(1'b0), .DIA2(1'b0), .DIA3(1'b0), .DIA4(1'b0), .DIA5(1'b0),
        .DIA6(1'b0), .DIA7(1'b0), .DIA8(1'b0),
        .DOA0(doa[0]), .DOA1(doa[1]), .DOA2(doa[2]), .DOA3(doa[3]), .DOA4(doa[4]),
        .DOA5(doa[5]), .DOA6(doa[6]), .DOA7(doa[7]), .DOA8(doa[8]),
        .CLKB(clk), .CEB(1'b1), .OCEB(1'b1), .WEB(1'b0), .RSTB(1'b0),
        .CSB0(1'b0), .CSB1(1'b0), .CSB2(1'b0),
        .ADB0(1'b0), .ADB1(1'b0), .ADB2(1'b0), .ADB3(b[0]), .ADB4(b[1]), .ADB5(b[2]),
        .ADB6(b[3]), .ADB7(b[4]), .ADB8(b[5]), .ADB9(b[6]), .ADB10(b[7]), .ADB11(1'b0),
        .ADB12(1'b0), .ADB13(1'b0),
        .DIB0(1'b0), .DIB1(1'b0), .DIB2(1'b0), .DIB3(1'b0), .DIB4(1'b0), .DIB5(1'b0),
        .DIB6(1'b0), .DIB7(1'b0), .DIB8(1'b0),
        .DOB0(dob[0]), .DOB1(dob[1]), .DOB2(dob[2]), .DOB3(dob[3]), .DOB4(dob[4]),
        .DOB5(dob[5]), .DOB6(dob[6]), .DOB7(dob[7]), .DOB8(dob[8]));
    assign qa = doa[7:0];
    assign qb = dob[7:0];
`else
    reg [7:0] ra, rb, oa, ob;
    always @(posedge clk) begin
        ra <= QO_SBOX_TAB[8*a +: 8];
        rb <= QO_SBOX_TAB[8*b +: 8];
        oa <= ra;
        ob <= rb;
    end
    assign qa = oa;
    assign qb = ob;
`endif
endmodule
