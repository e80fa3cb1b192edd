/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ADD and UPDATE <-> the library's entry configuration (quicoff_conn_config,
 * quicoff_conn_update): which TLV fills which field, the defaults of absent
 * ones, and the rules that make a key set complete.  Both directions live
 * here so that encode and decode cannot disagree on a field.
 */
#include "config.h"

const struct quicoff_conn_config *quicoff_wire_conn_config(struct quicoff_wire_msg *m)
{
    if (!m || (m->kind != QUICOFF_WIRE_ADD && m->kind != QUICOFF_WIRE_COMPAT_PEER &&
               m->kind != QUICOFF_WIRE_COMPAT_HOST))
        return NULL;
    struct quicoff_wire_conn *a = &m->u.add;
    a->cfg.secret = a->cfg.secret_len ? a->secret : NULL;
    return &a->cfg;
}

const struct quicoff_conn_update *quicoff_wire_conn_update(struct quicoff_wire_msg *m)
{
    if (!m || m->kind != QUICOFF_WIRE_UPDATE)
        return NULL;
    struct quicoff_wire_update *u = &m->u.update;
    u->upd.secret = u->upd.secret_len ? u->secret : NULL;
    return &u->upd;
}

/* ------------------------------------------------------------------------ */
/* Decode                                                                    */

quicoff_status_t qo_wire_read_add(const struct tlvs *t, struct quicoff_wire_msg *m)
{
    struct quicoff_wire_conn *a = &m->u.add;
    struct quicoff_conn_config *c = &a->cfg;
    quicoff_conn_config_init(c);
    c->direction = (quicoff_direction_t)m->direction;
    uint8_t u8;

    if (!has(t, B_SUITE))
        return QUICOFF_MALFORMED;
    TRY(get_enum(t, B_SUITE, QUICOFF_SUITE_COUNT - 1, &u8));
    c->suite = (quicoff_suite_t)u8;
    if (has(t, B_LEVEL)) {
        TRY(get_enum(t, B_LEVEL, QUICOFF_LEVEL_COUNT - 1, &u8));
        c->level = (quicoff_level_t)u8;
    }
    if (has(t, B_QUIC_VERSION))
        TRY(get_u32(t, B_QUIC_VERSION, &c->version));
    if (has(t, B_DCID))
        TRY(get_dcid(t, c->dcid, &c->dcid_len));
    if (has(t, B_LOCAL_ADDR))
        TRY(get_addr(t, B_LOCAL_ADDR, &c->local_addr));
    if (has(t, B_PATH_ID))
        TRY(get_u32(t, B_PATH_ID, &c->path_id));
    if (has(t, B_NONCE_LAYOUT)) {
        TRY(get_enum(t, B_NONCE_LAYOUT, QUICOFF_NONCE_MULTIPATH_PATH_ID_LE, &u8));
        c->nonce_layout = (quicoff_nonce_layout_t)u8;
    }
    if (has(t, B_FAIL_ACTION)) {
        TRY(get_enum(t, B_FAIL_ACTION, QUICOFF_FAIL_PASS, &u8));
        c->fail_action = (quicoff_fail_action_t)u8;
    }
    if (has(t, B_LARGEST_PN))
        TRY(get_pn(t, B_LARGEST_PN, true, &c->largest_pn));
    if (has(t, B_USAGE_THRESHOLD))
        TRY(get_u64(t, B_USAGE_THRESHOLD, &c->usage_threshold));
    if (has(t, B_KEY_GENERATION))
        TRY(get_u32(t, B_KEY_GENERATION, &c->key_generation));

    size_t klen = quicoff_suite_key_len(c->suite);
    bool raw = has(t, B_PACKET_KEY) || has(t, B_IV) || has(t, B_HP_KEY);
    if (has(t, B_SECRET)) {
        if (raw)
            return QUICOFF_MALFORMED;
        size_t n = 0;
        TRY(get_secret(t, quicoff_suite_secret_len(c->suite), a->secret, &n));
        c->secret_len = n;
    } else {
        if (!has(t, B_PACKET_KEY) || !has(t, B_IV) || !has(t, B_HP_KEY))
            return QUICOFF_MALFORMED;
        TRY(get_key(t, B_PACKET_KEY, klen, c->keys.key));
        TRY(get_iv(t, B_IV, c->keys.iv));
        TRY(get_key(t, B_HP_KEY, klen, c->keys.hp));
    }
    if (has(t, B_NEXT_PACKET_KEY) != has(t, B_NEXT_IV))
        return QUICOFF_MALFORMED;
    if (has(t, B_NEXT_PACKET_KEY)) {
        TRY(get_key(t, B_NEXT_PACKET_KEY, klen, c->next_keys.key));
        TRY(get_iv(t, B_NEXT_IV, c->next_keys.iv));
        c->has_next_keys = true;
    }
    if (has(t, B_ENCAP)) {
        TRY(get_encap(t, &a->encap));
        a->has_encap = true;
    }
    /* absent: greasing accepted (quicoff_conn_config_init's default) */
    if (has(t, B_GREASE_QUIC_BIT)) {
        TRY(get_enum(t, B_GREASE_QUIC_BIT, 1, &u8));
        c->grease_quic_bit = u8 != 0;
    }
    return QUICOFF_OK;
}

quicoff_status_t qo_wire_read_update(const struct tlvs *t, struct quicoff_wire_msg *m)
{
    struct quicoff_wire_update *w = &m->u.update;
    struct quicoff_conn_update *u = &w->upd;
    uint8_t u8;

    bool keys = has(t, B_PACKET_KEY) || has(t, B_IV) || has(t, B_SECRET);
    if (keys != has(t, B_KEY_GENERATION))
        return QUICOFF_MALFORMED;
    if (keys) {
        TRY(get_u32(t, B_KEY_GENERATION, &u->key_generation));
        if (has(t, B_SECRET)) {
            if (has(t, B_PACKET_KEY) || has(t, B_IV))
                return QUICOFF_MALFORMED;
            size_t n = 0;
            TRY(get_secret(t, 0, w->secret, &n));
            u->secret_len = n;
        } else {
            if (!has(t, B_PACKET_KEY) || !has(t, B_IV))
                return QUICOFF_MALFORMED;
            TRY(get_key(t, B_PACKET_KEY, 0, u->keys.key));
            TRY(get_iv(t, B_IV, u->keys.iv));
            w->key_len = (uint8_t)t->n[B_PACKET_KEY];
        }
        u->what |= QUICOFF_UPDATE_KEYS;
    }
    bool roll = m->flags & QUICOFF_WIRE_UPDATE_ROLL;
    if (roll != has(t, B_ROLL_GENERATION))
        return QUICOFF_MALFORMED;
    if (roll) {
        TRY(get_u32(t, B_ROLL_GENERATION, &w->roll_generation));
        u->what |= QUICOFF_UPDATE_ROLL;
    }
    if (m->flags & QUICOFF_WIRE_UPDATE_DROP_OLD)
        u->what |= QUICOFF_UPDATE_DROP_OLD;
    if (has(t, B_LARGEST_PN)) {
        TRY(get_pn(t, B_LARGEST_PN, true, &u->largest_pn));
        u->what |= QUICOFF_UPDATE_LARGEST_PN;
    }
    if (has(t, B_FAIL_ACTION)) {
        TRY(get_enum(t, B_FAIL_ACTION, QUICOFF_FAIL_PASS, &u8));
        u->fail_action = (quicoff_fail_action_t)u8;
        u->what |= QUICOFF_UPDATE_FAIL_ACTION;
    }
    if (has(t, B_USAGE_THRESHOLD)) {
        TRY(get_u64(t, B_USAGE_THRESHOLD, &u->usage_threshold));
        u->what |= QUICOFF_UPDATE_THRESHOLD;
    }
    if (has(t, B_ENCAP)) {
        TRY(get_encap(t, &w->encap));
        w->has_encap = true;
    }
    return QUICOFF_OK;
}

/* ------------------------------------------------------------------------ */
/* Encode                                                                    */

quicoff_status_t qo_wire_put_add(struct wbuf *w, const struct quicoff_wire_msg *m)
{
    const struct quicoff_wire_conn *a = &m->u.add;
    const struct quicoff_conn_config *c = &a->cfg;
    if ((unsigned)c->suite >= QUICOFF_SUITE_COUNT || (unsigned)c->level >= QUICOFF_LEVEL_COUNT ||
        c->dcid_len > QUICOFF_MAX_CID_LEN ||
        (unsigned)c->nonce_layout > QUICOFF_NONCE_MULTIPATH_PATH_ID_LE ||
        (unsigned)c->fail_action > QUICOFF_FAIL_PASS ||
        (c->largest_pn > QUICOFF_WIRE_PN_MAX && c->largest_pn != UINT64_MAX) ||
        (c->local_addr.family != 0 && !addr_ok(&c->local_addr)))
        return QUICOFF_INVALID_ARGUMENT;
    size_t klen = quicoff_suite_key_len(c->suite);
    const uint8_t *secret = NULL;
    if (c->secret_len) {
        if (c->secret_len != quicoff_suite_secret_len(c->suite))
            return QUICOFF_INVALID_ARGUMENT;
        secret = c->secret ? c->secret : a->secret;
    }
    tlv_u8(w, QUICOFF_WIRE_T_SUITE, (uint8_t)c->suite);
    tlv_u8(w, QUICOFF_WIRE_T_LEVEL, (uint8_t)c->level);
    tlv_u32(w, QUICOFF_WIRE_T_QUIC_VERSION, c->version);
    tlv_bytes(w, QUICOFF_WIRE_T_DCID, c->dcid, c->dcid_len);
    if (c->local_addr.family)
        put_addr_tlv(w, QUICOFF_WIRE_T_LOCAL_ADDR, &c->local_addr);
    tlv_u32(w, QUICOFF_WIRE_T_PATH_ID, c->path_id);
    tlv_u8(w, QUICOFF_WIRE_T_NONCE_LAYOUT, (uint8_t)c->nonce_layout);
    tlv_u8(w, QUICOFF_WIRE_T_FAIL_ACTION, (uint8_t)c->fail_action);
    tlv_u64(w, QUICOFF_WIRE_T_LARGEST_PN, c->largest_pn);
    tlv_u64(w, QUICOFF_WIRE_T_USAGE_THRESHOLD, c->usage_threshold);
    tlv_u32(w, QUICOFF_WIRE_T_KEY_GENERATION, c->key_generation);
    if (!secret) {
        tlv_bytes(w, QUICOFF_WIRE_T_PACKET_KEY, c->keys.key, klen);
        tlv_bytes(w, QUICOFF_WIRE_T_IV, c->keys.iv, QUICOFF_IV_LEN);
        tlv_bytes(w, QUICOFF_WIRE_T_HP_KEY, c->keys.hp, klen);
    }
    if (c->has_next_keys) {
        tlv_bytes(w, QUICOFF_WIRE_T_NEXT_PACKET_KEY, c->next_keys.key, klen);
        tlv_bytes(w, QUICOFF_WIRE_T_NEXT_IV, c->next_keys.iv, QUICOFF_IV_LEN);
    }
    if (secret)
        tlv_bytes(w, QUICOFF_WIRE_T_SECRET, secret, c->secret_len);
    if (a->has_encap)
        TRY(put_encap_tlv(w, &a->encap));
    /* sent only when off: absent means on, and ADDs stay as they were */
    if (!c->grease_quic_bit)
        tlv_u8(w, QUICOFF_WIRE_T_GREASE_QUIC_BIT, 0);
    return QUICOFF_OK;
}

static const uint32_t update_known = QUICOFF_UPDATE_KEYS | QUICOFF_UPDATE_ROLL |
                                     QUICOFF_UPDATE_DROP_OLD | QUICOFF_UPDATE_LARGEST_PN |
                                     QUICOFF_UPDATE_FAIL_ACTION | QUICOFF_UPDATE_THRESHOLD;

uint8_t qo_wire_update_flags(const struct quicoff_conn_update *u)
{
    return (uint8_t)(((u->what & QUICOFF_UPDATE_ROLL) ? QUICOFF_WIRE_UPDATE_ROLL : 0) |
                     ((u->what & QUICOFF_UPDATE_DROP_OLD) ? QUICOFF_WIRE_UPDATE_DROP_OLD : 0));
}

quicoff_status_t qo_wire_put_update(struct wbuf *w, const struct quicoff_wire_msg *m)
{
    const struct quicoff_wire_update *x = &m->u.update;
    const struct quicoff_conn_update *u = &x->upd;
    if ((u->what & ~update_known) ||
        ((u->what & QUICOFF_UPDATE_FAIL_ACTION) && (unsigned)u->fail_action > QUICOFF_FAIL_PASS) ||
        ((u->what & QUICOFF_UPDATE_LARGEST_PN) && u->largest_pn > QUICOFF_WIRE_PN_MAX &&
         u->largest_pn != UINT64_MAX))
        return QUICOFF_INVALID_ARGUMENT;
    const uint8_t *secret = NULL;
    if (u->what & QUICOFF_UPDATE_KEYS) {
        if (u->secret_len) {
            if (u->secret_len != 32 && u->secret_len != 48)
                return QUICOFF_INVALID_ARGUMENT;
            secret = u->secret ? u->secret : x->secret;
        } else if (!key_len_ok(x->key_len)) {
            return QUICOFF_INVALID_ARGUMENT;
        }
    }
    if (u->what & QUICOFF_UPDATE_FAIL_ACTION)
        tlv_u8(w, QUICOFF_WIRE_T_FAIL_ACTION, (uint8_t)u->fail_action);
    if (u->what & QUICOFF_UPDATE_LARGEST_PN)
        tlv_u64(w, QUICOFF_WIRE_T_LARGEST_PN, u->largest_pn);
    if (u->what & QUICOFF_UPDATE_THRESHOLD)
        tlv_u64(w, QUICOFF_WIRE_T_USAGE_THRESHOLD, u->usage_threshold);
    if (u->what & QUICOFF_UPDATE_KEYS) {
        tlv_u32(w, QUICOFF_WIRE_T_KEY_GENERATION, u->key_generation);
        if (!secret) {
            tlv_bytes(w, QUICOFF_WIRE_T_PACKET_KEY, u->keys.key, x->key_len);
            tlv_bytes(w, QUICOFF_WIRE_T_IV, u->keys.iv, QUICOFF_IV_LEN);
        } else {
            tlv_bytes(w, QUICOFF_WIRE_T_SECRET, secret, u->secret_len);
        }
    }
    if (x->has_encap)
        TRY(put_encap_tlv(w, &x->encap));
    if (u->what & QUICOFF_UPDATE_ROLL)
        tlv_u32(w, QUICOFF_WIRE_T_ROLL_GENERATION, x->roll_generation);
    return QUICOFF_OK;
}
