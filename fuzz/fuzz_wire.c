/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the host <-> offload protocol decoder (src/wire.c).
 * The first input byte picks the entry point (whole frame, 0x88B5 payload,
 * 0x88B6 payload); the rest is the input, copied to a heap buffer of its exact
 * size so ASan sees any over-read.  Whatever decodes must re-encode, and the
 * re-encoding must decode to the same message; a failed decode must leave no
 * secret in the message body.  Every input is also read by the data header
 * reader under both EtherTypes, which must agree with the full decoder
 * (quicoff_wire_data_hdr_read's contract in wire.h).
 *
 *   ninja -C build-fuzz fuzz/fuzz_wire && build-fuzz/fuzz/fuzz_wire -max_total_time=60
 */
#include "quicoff/wire.h"

#include <stdlib.h>
#include <string.h>

static void normalize(struct quicoff_wire_msg *m)
{
    m->detail = NULL;
    switch (m->kind) {
    case QUICOFF_WIRE_DATA_TO_OFFLOAD:
    case QUICOFF_WIRE_DATA_TRAIN:
    case QUICOFF_WIRE_DATA_TO_HOST:
    case QUICOFF_WIRE_COMPAT_DATA:
        m->u.data.payload = NULL;
        break;
    case QUICOFF_WIRE_ADD:
    case QUICOFF_WIRE_COMPAT_PEER:
    case QUICOFF_WIRE_COMPAT_HOST:
        m->u.add.cfg.secret = NULL;
        m->u.add.compat_right_padded = false;
        m->u.add.compat_dcid_len_bits = false;
        break;
    case QUICOFF_WIRE_UPDATE:
        m->u.update.upd.secret = NULL;
        break;
    default:
        break;
    }
}

static int decode(int mode, const uint8_t *p, size_t n, struct quicoff_wire_msg *m)
{
    switch (mode) {
    case 0:
        return quicoff_wire_decode(p, n, m);
    case 1:
        return quicoff_wire_decode_payload(QUICOFF_WIRE_ETHERTYPE_SIGNAL, p, n, m);
    default:
        return quicoff_wire_decode_payload(QUICOFF_WIRE_ETHERTYPE_DATA, p, n, m);
    }
}

static int is_data_kind(unsigned kind)
{
    return kind == QUICOFF_WIRE_DATA_TO_OFFLOAD || kind == QUICOFF_WIRE_DATA_TRAIN ||
           kind == QUICOFF_WIRE_DATA_TO_HOST || kind == QUICOFF_WIRE_COMPAT_DATA;
}

/* Where the full decoder sees a data kind: the same status, kind and fields
 * (the payload pointers too: both read p); elsewhere UNSUPPORTED, kind NONE
 * and a zeroed *d. */
static void cross_check_data_hdr(uint16_t et, const uint8_t *p, size_t n)
{
    struct quicoff_wire_msg m;
    quicoff_status_t full = quicoff_wire_decode_payload(et, p, n, &m);
    quicoff_wire_kind_t kind;
    struct quicoff_wire_data d;
    memset(&d, 0xa5, sizeof(d));
    quicoff_status_t hdr = quicoff_wire_data_hdr_read(et, p, n, &kind, &d);
    if (is_data_kind(m.kind)) {
        const struct quicoff_wire_data *f = &m.u.data;
        if (hdr != full || (unsigned)kind != m.kind || d.index != f->index || d.pn != f->pn ||
            d.flags != f->flags || d.status != f->status || d.level != f->level ||
            d.key_phase != f->key_phase || d.payload != f->payload ||
            d.payload_len != f->payload_len)
            abort();
        if (hdr == QUICOFF_OK &&
            (d.payload < p || d.payload_len > n || (size_t)(d.payload - p) > n - d.payload_len))
            abort(); /* the QUIC packet must lie inside the input */
    } else {
        static const struct quicoff_wire_data zero;
        if (hdr != QUICOFF_UNSUPPORTED || kind != QUICOFF_WIRE_NONE ||
            memcmp(&d, &zero, sizeof(d)) != 0)
            abort();
    }
    quicoff_wire_msg_clear(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 3;
    size_t n = size - 1;
    uint8_t *p = malloc(n ? n : 1);
    memcpy(p, data + 1, n);
    cross_check_data_hdr(QUICOFF_WIRE_ETHERTYPE_SIGNAL, p, n);
    cross_check_data_hdr(QUICOFF_WIRE_ETHERTYPE_DATA, p, n);
    struct quicoff_wire_msg m, m2;
    if (decode(mode, p, n, &m) == QUICOFF_OK) {
        static uint8_t out[1 << 17];
        size_t on = 0;
        uint16_t et = 0;
        quicoff_status_t st = mode == 0
                                  ? quicoff_wire_encode(&m, out, sizeof(out), &on)
                                  : quicoff_wire_encode_payload(&m, out, sizeof(out), &on, &et);
        if (st != QUICOFF_OK)
            abort(); /* everything that decodes must encode */
        int mode2 = mode == 0 ? 0 : (et == QUICOFF_WIRE_ETHERTYPE_DATA ? 2 : 1);
        uint8_t *q = malloc(on ? on : 1);
        memcpy(q, out, on);
        if (decode(mode2, q, on, &m2) != QUICOFF_OK)
            abort();
        normalize(&m);
        normalize(&m2);
        if (memcmp(&m, &m2, sizeof(m)) != 0)
            abort();
        free(q);
        quicoff_wire_msg_clear(&m2);
    } else {
        static const uint8_t zero[sizeof(m.u)];
        if (memcmp(&m.u, zero, sizeof(m.u)) != 0)
            abort(); /* a failed decode leaves nothing behind */
    }
    quicoff_wire_msg_clear(&m);
    free(p);
    return 0;
}
