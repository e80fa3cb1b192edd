// SPDX-License-Identifier: Apache-2.0
// qo_frame_buf: the per-slot frame state quicoff_rx and quicoff_tx share:
// the beats received of the slot's frame, its length in bytes (latched at
// tlast) and whether it was longer than MAXBEATS beats (the pipeline drops
// it). restart makes it ready for the next frame.
//
// The beats themselves are not kept here: both cores keep every slot's beats
// in block-RAM qo_frame_mem memories shared by the slots, and the header
// window the parser reads in qo_frame_hdr (two for all the slots), because a
// buffer and a 128-byte window per slot, read asynchronously through slot
// multiplexers, was most of the pipelined cores' area (docs/hw.md).
module qo_frame_buf #(
    parameter DATA_W   = 128,
    parameter MAXBEATS = 128,
    parameter NB       = DATA_W / 8
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              restart,
    input  wire              in_beat,
    input  wire [NB-1:0]     in_keep,
    input  wire              in_last,
    output reg  [15:0]       wbeat,     // beats received of this frame
    output reg               ovf,       // a beat did not fit
    output reg  [15:0]       flen       // frame length in bytes (valid after tlast)
);
    `include "qo_util.vh"

    always @(posedge clk) begin
        if (rst || restart) begin
            wbeat <= 0;
            ovf   <= 0;
        end else if (in_beat) begin
            if (wbeat >= MAXBEATS) ovf <= 1'b1;
            wbeat <= wbeat + 1;
            if (in_last) flen <= {wbeat[11:0], 4'b0} + popc(in_keep);
        end
    end
endmodule
