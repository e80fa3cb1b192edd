// SPDX-License-Identifier: Apache-2.0
// qo_frame_mem: one beat memory shared by every frame slot, in block RAM.
//
// Why: a buffer per slot read asynchronously is LUT RAM, and with 16 slots
// and several read ports that was most of the pipelined RX core's LUTs. Here
// a slot's beats live at {slot, beat}; the read is registered (synchronous),
// which is what block RAM (ECP5 DP16KD, 7-series RAMB36) provides, so the
// caller presents the address one clock before it uses the data.
//
// One write port (a beat), one read port: a 16-byte window at any byte
// offset of a slot, which spans two consecutive beats. The beats are kept in
// two banks, even and odd, so that those two beats are one read from each
// bank. A caller that needs more read ports instantiates the memory again
// with the same writes (block RAM has one read port beside its write port,
// so a second port is a second copy whichever way it is written).
module qo_frame_mem #(
    parameter DATA_W   = 128,
    parameter NS       = 16,                 // slots
    parameter MAXBEATS = 128,                // beats per slot (even)
    parameter SW       = $clog2(NS),
    parameter MW       = $clog2(MAXBEATS)
) (
    input  wire              clk,
    input  wire              we,
    input  wire [SW-1:0]     w_slot,
    input  wire [MW-1:0]     w_beat,
    input  wire [DATA_W-1:0] w_data,
    input  wire [SW-1:0]     r_slot,
    input  wire [MW+3:0]     r_off,          // byte offset in the slot (wraps)
    output wire [127:0]      r_win           // bytes r_off.. r_off + 15, a clock later
);
    localparam AW = SW + MW - 1;
    reg [DATA_W-1:0] even [0:(1 << AW) - 1];
    reg [DATA_W-1:0] odd  [0:(1 << AW) - 1];

    always @(posedge clk)
        if (we) begin
            if (w_beat[0]) odd[{w_slot, w_beat[MW-1:1]}]  <= w_data;
            else           even[{w_slot, w_beat[MW-1:1]}] <= w_data;
        end

    // beat wb and wb + 1: for an even wb both sit at wb / 2; for an odd one
    // the even beat is the next pair's
    wire [MW-1:0]   wb  = r_off[MW+3:4];
    wire [MW-1:0]   wb1 = wb + 1'b1;
    reg [DATA_W-1:0] e_q, o_q;
    reg              odd_q;
    reg [3:0]        sh_q;
    always @(posedge clk) begin
        e_q   <= even[{r_slot, wb1[MW-1:1]}];
        o_q   <= odd[{r_slot, wb[MW-1:1]}];
        odd_q <= wb[0];
        sh_q  <= r_off[3:0];
    end
    wire [255:0] pair = odd_q ? {e_q, o_q} : {o_q, e_q};
    assign r_win = pair >> {sh_q, 3'b000};
endmodule
