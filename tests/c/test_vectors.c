/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Known-answer tests through the full data path (quicoff_protect_burst and
 * quicoff_unprotect_datagram, with table entries made from the RFC secrets):
 *  - RFC 9001 Appendix A.2 (client Initial), A.3 (server Initial), A.5
 *    (ChaCha20-Poly1305 short header);
 *  - RFC 9369 Appendix A.2, A.3 and A.5 (the same packets in QUIC v2);
 *  - coalesced packets (Initial + Handshake + 1-RTT in one datagram) and
 *    trailing zero padding.
 * Hex is as printed in the RFCs (spaces ignored).
 */
#include "test_packets.h"
#include "test_util.h"

/* ok() with the condition evaluated before the message arguments (a plain
 * call leaves their order unspecified, so a message could show stale values). */
#define check(cond, ...)         \
    do {                         \
        int check_ = !!(cond);   \
        ok(check_, __VA_ARGS__); \
    } while (0)

/* RFC 9001 A.1 / RFC 9369 A.1 */
static const char *const rfc_dcid = "8394c8f03e515708";
static const char *const v1_client_secret =
    "c00cf151ca5be075ed0ebfb5c80323c4 2d6b7db67881289af4008f1f6c357aea";
static const char *const v1_server_secret =
    "3c199828fd139efd216c155ad844cc81 fb82fa8d7446fa7d78be803acdda951b";
static const char *const v2_client_secret =
    "14ec9d6eb9fd7af83bf5a668bc17a7e2 83766aade7ecd0891f70f9ff7f4bf47b";
static const char *const v2_server_secret =
    "0263db1782731bf4588e7e4d93b74639 07cb8cd8200b5da55a8bd488eafc37c1";

/* A.2: the client's CRYPTO frame, padded with PADDING to a 1162-byte payload */
static const char *const client_crypto =
    "060040f1010000ed0303ebf8fa56f129 39b9584a3896472ec40bb863cfd3e868"
    "04fe3a47f06a2b69484c000004130113 02010000c000000010000e00000b6578"
    "616d706c652e636f6dff01000100000a 00080006001d00170018001000070005"
    "04616c706e0005000501000000000033 00260024001d00209370b2c9caa47fba"
    "baf4559fedba753de171fa71f50f1ce1 5d43e994ec74d748002b000302030400"
    "0d0010000e0403050306030203080408 050806002d00020101001c0002400100"
    "3900320408ffffffffffffffff050480 00ffff07048000ffff08011001048000"
    "75300901100f088394c8f03e51570806 048000ffff";

/* A.3: ACK + CRYPTO, no padding */
static const char *const server_payload =
    "02000000000600405a020000560303ee fce7f7b37ba1d1632e96677825ddf739"
    "88cfc79825df566dc5430b9a045a1200 130100002e00330024001d00209d3c94"
    "0d89690b84d08a60993c144eca684d10 81287c834d5311bcf32bb9da1a002b00"
    "020304";

static const char *const v1_client_header = "c300000001088394c8f03e5157080000449e00000002";
static const char *const v1_client_packet =
    "c000000001088394c8f03e5157080000 449e7b9aec34d1b1c98dd7689fb8ec11"
    "d242b123dc9bd8bab936b47d92ec356c 0bab7df5976d27cd449f63300099f399"
    "1c260ec4c60d17b31f8429157bb35a12 82a643a8d2262cad67500cadb8e7378c"
    "8eb7539ec4d4905fed1bee1fc8aafba1 7c750e2c7ace01e6005f80fcb7df6212"
    "30c83711b39343fa028cea7f7fb5ff89 eac2308249a02252155e2347b63d58c5"
    "457afd84d05dfffdb20392844ae81215 4682e9cf012f9021a6f0be17ddd0c208"
    "4dce25ff9b06cde535d0f920a2db1bf3 62c23e596d11a4f5a6cf3948838a3aec"
    "4e15daf8500a6ef69ec4e3feb6b1d98e 610ac8b7ec3faf6ad760b7bad1db4ba3"
    "485e8a94dc250ae3fdb41ed15fb6a8e5 eba0fc3dd60bc8e30c5c4287e53805db"
    "059ae0648db2f64264ed5e39be2e20d8 2df566da8dd5998ccabdae053060ae6c"
    "7b4378e846d29f37ed7b4ea9ec5d82e7 961b7f25a9323851f681d582363aa5f8"
    "9937f5a67258bf63ad6f1a0b1d96dbd4 faddfcefc5266ba6611722395c906556"
    "be52afe3f565636ad1b17d508b73d874 3eeb524be22b3dcbc2c7468d54119c74"
    "68449a13d8e3b95811a198f3491de3e7 fe942b330407abf82a4ed7c1b311663a"
    "c69890f4157015853d91e923037c227a 33cdd5ec281ca3f79c44546b9d90ca00"
    "f064c99e3dd97911d39fe9c5d0b23a22 9a234cb36186c4819e8b9c5927726632"
    "291d6a418211cc2962e20fe47feb3edf 330f2c603a9d48c0fcb5699dbfe58964"
    "25c5bac4aee82e57a85aaf4e2513e4f0 5796b07ba2ee47d80506f8d2c25e50fd"
    "14de71e6c418559302f939b0e1abd576 f279c4b2e0feb85c1f28ff18f58891ff"
    "ef132eef2fa09346aee33c28eb130ff2 8f5b766953334113211996d20011a198"
    "e3fc433f9f2541010ae17c1bf202580f 6047472fb36857fe843b19f5984009dd"
    "c324044e847a4f4a0ab34f719595de37 252d6235365e9b84392b061085349d73"
    "203a4a13e96f5432ec0fd4a1ee65accd d5e3904df54c1da510b0ff20dcc0c77f"
    "cb2c0e0eb605cb0504db87632cf3d8b4 dae6e705769d1de354270123cb11450e"
    "fc60ac47683d7b8d0f811365565fd98c 4c8eb936bcab8d069fc33bd801b03ade"
    "a2e1fbc5aa463d08ca19896d2bf59a07 1b851e6c239052172f296bfb5e724047"
    "90a2181014f3b94a4e97d117b4381303 68cc39dbb2d198065ae3986547926cd2"
    "162f40a29f0c3c8745c0f50fba3852e5 66d44575c29d39a03f0cda721984b6f4"
    "40591f355e12d439ff150aab7613499d bd49adabc8676eef023b15b65bfc5ca0"
    "6948109f23f350db82123535eb8a7433 bdabcb909271a6ecbcb58b936a88cd4e"
    "8f2e6ff5800175f113253d8fa9ca8885 c2f552e657dc603f252e1a8e308f76f0"
    "be79e2fb8f5d5fbbe2e30ecadd220723 c8c0aea8078cdfcb3868263ff8f09400"
    "54da48781893a7e49ad5aff4af300cd8 04a6b6279ab3ff3afb64491c85194aab"
    "760d58a606654f9f4400e8b38591356f bf6425aca26dc85244259ff2b19c41b9"
    "f96f3ca9ec1dde434da7d2d392b905dd f3d1f9af93d1af5950bd493f5aa731b4"
    "056df31bd267b6b90a079831aaf579be 0a39013137aac6d404f518cfd4684064"
    "7e78bfe706ca4cf5e9c5453e9f7cfd2b 8b4c8d169a44e55c88d4a9a7f9474241"
    "e221af44860018ab0856972e194cd934";

static const char *const v1_server_header = "c1000000010008f067a5502a4262b50040750001";
static const char *const v1_server_packet =
    "cf000000010008f067a5502a4262b500 4075c0d95a482cd0991cd25b0aac406a"
    "5816b6394100f37a1c69797554780bb3 8cc5a99f5ede4cf73c3ec2493a1839b3"
    "dbcba3f6ea46c5b7684df3548e7ddeb9 c3bf9c73cc3f3bded74b562bfb19fb84"
    "022f8ef4cdd93795d77d06edbb7aaf2f 58891850abbdca3d20398c276456cbc4"
    "2158407dd074ee";

static const char *const v2_client_header = "d36b3343cf088394c8f03e5157080000449e00000002";
static const char *const v2_client_packet =
    "d76b3343cf088394c8f03e5157080000 449ea0c95e82ffe67b6abcdb4298b485"
    "dd04de806071bf03dceebfa162e75d6c 96058bdbfb127cdfcbf903388e99ad04"
    "9f9a3dd4425ae4d0992cfff18ecf0fdb 5a842d09747052f17ac2053d21f57c5d"
    "250f2c4f0e0202b70785b7946e992e58 a59ac52dea6774d4f03b55545243cf1a"
    "12834e3f249a78d395e0d18f4d766004 f1a2674802a747eaa901c3f10cda5500"
    "cb9122faa9f1df66c392079a1b40f0de 1c6054196a11cbea40afb6ef5253cd68"
    "18f6625efce3b6def6ba7e4b37a40f77 32e093daa7d52190935b8da58976ff33"
    "12ae50b187c1433c0f028edcc4c2838b 6a9bfc226ca4b4530e7a4ccee1bfa2a3"
    "d396ae5a3fb512384b2fdd851f784a65 e03f2c4fbe11a53c7777c023462239dd"
    "6f7521a3f6c7d5dd3ec9b3f233773d4b 46d23cc375eb198c63301c21801f6520"
    "bcfb7966fc49b393f0061d974a2706df 8c4a9449f11d7f3d2dcbb90c6b877045"
    "636e7c0c0fe4eb0f697545460c806910 d2c355f1d253bc9d2452aaa549e27a1f"
    "ac7cf4ed77f322e8fa894b6a83810a34 b361901751a6f5eb65a0326e07de7c12"
    "16ccce2d0193f958bb3850a833f7ae43 2b65bc5a53975c155aa4bcb4f7b2c4e5"
    "4df16efaf6ddea94e2c50b4cd1dfe060 17e0e9d02900cffe1935e0491d77ffb4"
    "fdf85290fdd893d577b1131a610ef6a5 c32b2ee0293617a37cbb08b847741c3b"
    "8017c25ca9052ca1079d8b78aebd4787 6d330a30f6a8c6d61dd1ab5589329de7"
    "14d19d61370f8149748c72f132f0fc99 f34d766c6938597040d8f9e2bb522ff9"
    "9c63a344d6a2ae8aa8e51b7b90a4a806 105fcbca31506c446151adfeceb51b91"
    "abfe43960977c87471cf9ad4074d30e1 0d6a7f03c63bd5d4317f68ff325ba3bd"
    "80bf4dc8b52a0ba031758022eb025cdd 770b44d6d6cf0670f4e990b22347a7db"
    "848265e3e5eb72dfe8299ad7481a4083 22cac55786e52f633b2fb6b614eaed18"
    "d703dd84045a274ae8bfa73379661388 d6991fe39b0d93debb41700b41f90a15"
    "c4d526250235ddcd6776fc77bc97e7a4 17ebcb31600d01e57f32162a8560cacc"
    "7e27a096d37a1a86952ec71bd89a3e9a 30a2a26162984d7740f81193e8238e61"
    "f6b5b984d4d3dfa033c1bb7e4f0037fe bf406d91c0dccf32acf423cfa1e70710"
    "10d3f270121b493ce85054ef58bada42 310138fe081adb04e2bd901f2f13458b"
    "3d6758158197107c14ebb193230cd115 7380aa79cae1374a7c1e5bbcb80ee23e"
    "06ebfde206bfb0fcbc0edc4ebec30966 1bdd908d532eb0c6adc38b7ca7331dce"
    "8dfce39ab71e7c32d318d136b6100671 a1ae6a6600e3899f31f0eed19e3417d1"
    "34b90c9058f8632c798d4490da498730 7cba922d61c39805d072b589bd52fdf1"
    "e86215c2d54e6670e07383a27bbffb5a ddf47d66aa85a0c6f9f32e59d85a44dd"
    "5d3b22dc2be80919b490437ae4f36a0a e55edf1d0b5cb4e9a3ecabee93dfc6e3"
    "8d209d0fa6536d27a5d6fbb17641cde2 7525d61093f1b28072d111b2b4ae5f89"
    "d5974ee12e5cf7d5da4d6a31123041f3 3e61407e76cffcdcfd7e19ba58cf4b53"
    "6f4c4938ae79324dc402894b44faf8af bab35282ab659d13c93f70412e85cb19"
    "9a37ddec600545473cfb5a05e08d0b20 9973b2172b4d21fb69745a262ccde96b"
    "a18b2faa745b6fe189cf772a9f84cbfc";

static const char *const v2_server_header = "d16b3343cf0008f067a5502a4262b50040750001";
static const char *const v2_server_packet =
    "dc6b3343cf0008f067a5502a4262b500 4075d92faaf16f05d8a4398c47089698"
    "baeea26b91eb761d9b89237bbf872630 17915358230035f7fd3945d88965cf17"
    "f9af6e16886c61bfc703106fbaf3cb4c fa52382dd16a393e42757507698075b2"
    "c984c707f0a0812d8cd5a6881eaf21ce da98f4bd23f6fe1a3e2c43edd9ce7ca8"
    "4bed8521e2e140";

/* A.5 */
static const char *const chacha_secret =
    "9ac312a7f877468ebe69422748ad00a1 5443f18203a07d6060f688f30f21632b";
static const char *const chacha_v1_packet = "4cfe4189655e5cd55c41f69080575d7999c25a5bfb";
static const char *const chacha_v2_packet = "5558b1c60ae7b6b932bc27d786f4bc2bb20f2162ba";
#define CHACHA_PN UINT64_C(654360564)

#define GUARD 64
#define GUARD_BYTE 0xa5

/* ------------------------------------------------------------------------ */

static struct quicoff_table *table_new(uint32_t capacity, uint8_t cid_len)
{
    struct quicoff_table_config cfg = {.capacity = capacity, .local_cid_len = cid_len};
    quicoff_status_t st = QUICOFF_INVALID_ARGUMENT;
    struct quicoff_table *t = quicoff_table_create(&cfg, &st);
    if (!ok(t != NULL && st == QUICOFF_OK, "table_create(capacity %u, cid_len %u): %s", capacity,
            cid_len, quicoff_status_name(st))) {
        done_testing();
        exit(1);
    }
    return t;
}

/* An entry from a TLS secret. */
static quicoff_conn_t add_secret(struct quicoff_table *t, quicoff_direction_t dir,
                                 quicoff_level_t level, quicoff_suite_t suite, uint32_t version,
                                 const uint8_t *dcid, uint8_t dcid_len, const uint8_t *secret,
                                 size_t secret_len, uint64_t largest_pn)
{
    struct quicoff_conn_config c;
    quicoff_conn_t h = QUICOFF_CONN_INVALID;
    quicoff_conn_config_init(&c);
    c.direction = dir;
    c.level = level;
    c.suite = suite;
    c.version = version;
    c.dcid_len = dcid_len;
    if (dcid_len)
        memcpy(c.dcid, dcid, dcid_len);
    c.secret = secret;
    c.secret_len = secret_len;
    c.largest_pn = largest_pn;
    quicoff_status_t st = quicoff_conn_add(t, &c, &h);
    check(st == QUICOFF_OK, "add %s %s entry (level %d, %s, v%s): %s",
          dir == QUICOFF_DIR_TX ? "TX" : "RX", quicoff_suite_name(suite), (int)level,
          dcid_len ? "dcid" : "no dcid", version == QUICOFF_VERSION_2 ? "2" : "1",
          quicoff_status_name(st));
    return h;
}

/* Compares bytes with a (long) hex vector, naming the first difference. */
static int ok_bytes(const uint8_t *got, size_t len, const char *want_hex, const char *what)
{
    static uint8_t want[4096];
    size_t n = hex_must(want, sizeof(want), want_hex);
    if (n != len)
        return ok(0, "%s: length %zu, want %zu", what, len, n);
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            return ok(0, "%s: first difference at byte %zu: got %02x, want %02x", what, i, got[i],
                      want[i]);
    return ok(1, "%s (%zu bytes)", what, n);
}

static int guards_intact(const uint8_t *buf, size_t total, size_t start, size_t end)
{
    for (size_t i = 0; i < total; i++)
        if ((i < start || i >= end) && buf[i] != GUARD_BYTE)
            return 0;
    return 1;
}

/* ------------------------------------------------------------------------ */

struct initial_vec {
    const char *name;
    uint32_t version;
    int client; /* 1: A.2 client Initial, 0: A.3 server Initial */
    const char *secret;
    const char *other_secret; /* the other side's: must not open the packet */
    const char *header;
    const char *packet;
    uint64_t pn;
    unsigned pn_len;
};

static const struct initial_vec initial_vecs[] = {
    {"RFC 9001 A.2 client Initial", QUICOFF_VERSION_1, 1, NULL, NULL, NULL, NULL, 2, 4},
    {"RFC 9001 A.3 server Initial", QUICOFF_VERSION_1, 0, NULL, NULL, NULL, NULL, 1, 2},
    {"RFC 9369 A.2 client Initial", QUICOFF_VERSION_2, 1, NULL, NULL, NULL, NULL, 2, 4},
    {"RFC 9369 A.3 server Initial", QUICOFF_VERSION_2, 0, NULL, NULL, NULL, NULL, 1, 2},
};

static void fill_vec(struct initial_vec *v)
{
    int v2 = v->version == QUICOFF_VERSION_2;
    const char *cs = v2 ? v2_client_secret : v1_client_secret;
    const char *ss = v2 ? v2_server_secret : v1_server_secret;
    v->secret = v->client ? cs : ss;
    v->other_secret = v->client ? ss : cs;
    if (v->client) {
        v->header = v2 ? v2_client_header : v1_client_header;
        v->packet = v2 ? v2_client_packet : v1_client_packet;
    } else {
        v->header = v2 ? v2_server_header : v1_server_header;
        v->packet = v2 ? v2_server_packet : v1_server_packet;
    }
}

/* The Initial secrets the library derives from the RFC's DCID are the RFC's. */
static void test_initial_secrets(void)
{
    uint8_t dcid[8], cs[32], ss[32];
    hex_must(dcid, sizeof(dcid), rfc_dcid);
    check(quicoff_derive_initial_secrets(dcid, 8, QUICOFF_VERSION_1, cs, ss) == QUICOFF_OK,
          "derive v1 initial secrets");
    ok_hex(cs, 32, v1_client_secret, "v1 client_initial_secret");
    ok_hex(ss, 32, v1_server_secret, "v1 server_initial_secret");
    check(quicoff_derive_initial_secrets(dcid, 8, QUICOFF_VERSION_2, cs, ss) == QUICOFF_OK,
          "derive v2 initial secrets");
    ok_hex(cs, 32, v2_client_secret, "v2 client_initial_secret");
    ok_hex(ss, 32, v2_server_secret, "v2 server_initial_secret");
}

/* Protect the RFC's plaintext with the sender's TX entry; unprotect the RFC's
 * bytes with the receiver's RX entry (keyed by the packet's DCID at level
 * INITIAL; the server Initial has an empty DCID). */
static void run_initial(const struct initial_vec *vin)
{
    struct initial_vec v = *vin;
    fill_vec(&v);
    test_current = v.name;

    uint8_t dcid[8], secret[32], other[32], hdr[64], payload[1200];
    uint8_t buf[GUARD + 1300 + GUARD];
    hex_must(dcid, sizeof(dcid), rfc_dcid);
    hex_must(secret, sizeof(secret), v.secret);
    hex_must(other, sizeof(other), v.other_secret);
    size_t hlen = hex_must(hdr, sizeof(hdr), v.header);
    size_t plen;
    if (v.client) {
        plen = hex_must(payload, sizeof(payload), client_crypto);
        memset(payload + plen, 0, 1162 - plen); /* PADDING frames */
        plen = 1162;
    } else {
        plen = hex_must(payload, sizeof(payload), server_payload);
    }
    uint8_t want_pkt[1300];
    size_t want_len = hex_must(want_pkt, sizeof(want_pkt), v.packet);
    check(want_len == hlen + plen + QUICOFF_TAG_LEN, "vector sizes agree (%zu)", want_len);

    struct quicoff_table *t = table_new(8, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);
    /* The sender's DCID is informative on TX; the receiver looks packets up by it. */
    const uint8_t *pkt_dcid = v.client ? dcid : NULL;
    uint8_t pkt_dcid_len = v.client ? 8 : 0;
    quicoff_conn_t tx = add_secret(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_INITIAL, QUICOFF_AES_128_GCM,
                                   v.version, pkt_dcid, pkt_dcid_len, secret, 32, UINT64_MAX);
    quicoff_conn_t rx = add_secret(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_INITIAL, QUICOFF_AES_128_GCM,
                                   v.version, pkt_dcid, pkt_dcid_len, secret, 32, UINT64_MAX);

    /* protect */
    memset(buf, GUARD_BYTE, sizeof(buf));
    uint8_t *p = buf + GUARD;
    memcpy(p, hdr, hlen);
    memcpy(p + hlen, payload, plen);
    struct quicoff_result r;
    struct quicoff_pkt pkt = {.data = p,
                              .end = (uint32_t)(hlen + plen),
                              .cap = (uint32_t)want_len,
                              .conn = tx,
                              .pn = v.pn};
    unsigned n = quicoff_protect_burst(w, &pkt, &r, 1);
    check(n == 1 && r.status == QUICOFF_OK, "protect: %u ok, status %s", n,
          quicoff_status_name(r.status));
    ok_bytes(p, want_len, v.packet, "protected bytes are the RFC's");
    check(guards_intact(buf, sizeof(buf), GUARD, GUARD + want_len),
          "protect wrote nothing outside the packet");
    check(r.pn == v.pn && r.pn_len == v.pn_len && r.pn_off == hlen - v.pn_len &&
              r.payload_off == hlen && r.payload_len == plen && r.packet_end == want_len &&
              r.level == QUICOFF_LEVEL_INITIAL && (r.flags & QUICOFF_FLAG_LONG_HEADER) &&
              r.conn == tx,
          "protect result: pn %llu/%u pn_off %u payload %u+%u end %u level %u flags %#x",
          (unsigned long long)r.pn, r.pn_len, r.pn_off, r.payload_off, r.payload_len, r.packet_end,
          r.level, r.flags);

    /* unprotect the RFC's bytes */
    memset(buf, GUARD_BYTE, sizeof(buf));
    memcpy(p, want_pkt, want_len);
    struct quicoff_result res[4];
    memset(res, 0xee, sizeof(res));
    n = quicoff_unprotect_datagram(w, p, (uint32_t)want_len, NULL, res, 4);
    check(n == 1 && res[0].status == QUICOFF_OK, "unprotect: %u results, status %s", n,
          quicoff_status_name(res[0].status));
    check(res[0].conn == rx, "found the RX entry by %s", v.client ? "DCID" : "empty DCID");
    check(memcmp(p, hdr, hlen) == 0, "header with protection removed: %s", hex_str(p, hlen));
    check(memcmp(p + hlen, payload, plen) == 0, "plaintext payload recovered");
    check(memcmp(p + hlen + plen, want_pkt + hlen + plen, QUICOFF_TAG_LEN) == 0,
          "tag left in place");
    check(res[0].pn == v.pn && res[0].pn_len == v.pn_len && res[0].pn_off == hlen - v.pn_len &&
              res[0].payload_off == hlen && res[0].payload_len == plen &&
              res[0].packet_end == want_len && res[0].hdr_off == 0 &&
              res[0].level == QUICOFF_LEVEL_INITIAL && res[0].key_phase == 0 &&
              res[0].flags == QUICOFF_FLAG_LONG_HEADER,
          "unprotect result: pn %llu/%u pn_off %u payload %u+%u end %u flags %#x",
          (unsigned long long)res[0].pn, res[0].pn_len, res[0].pn_off, res[0].payload_off,
          res[0].payload_len, res[0].packet_end, res[0].flags);
    check(guards_intact(buf, sizeof(buf), GUARD, GUARD + want_len),
          "unprotect wrote nothing outside the packet");

    /* The other side's keys must not open it, and leave it as received. */
    quicoff_conn_remove(t, rx);
    quicoff_conn_t rx2 = add_secret(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_INITIAL, QUICOFF_AES_128_GCM,
                                    v.version, pkt_dcid, pkt_dcid_len, other, 32, UINT64_MAX);
    memcpy(p, want_pkt, want_len);
    n = quicoff_unprotect_datagram(w, p, (uint32_t)want_len, NULL, res, 4);
    check(n == 1 && res[0].status == QUICOFF_AUTH_FAILED && res[0].conn == rx2,
          "wrong direction's keys: %s", quicoff_status_name(res[0].status));
    check(memcmp(p, want_pkt, want_len) == 0, "bytes left exactly as received");

    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

static void test_initials(void)
{
    for (size_t i = 0; i < sizeof(initial_vecs) / sizeof(initial_vecs[0]); i++)
        run_initial(&initial_vecs[i]);
}

/* A.5: ChaCha20-Poly1305, short header, empty DCID, pn 654360564 (3 bytes). */
static void run_chacha(uint32_t version, const char *want_hex)
{
    uint8_t secret[32], want[64], buf[GUARD + 64 + GUARD];
    hex_must(secret, sizeof(secret), chacha_secret);
    size_t want_len = hex_must(want, sizeof(want), want_hex);

    struct quicoff_table *t = table_new(8, 0); /* short headers carry no DCID */
    struct quicoff_worker *w = quicoff_worker_create(t);
    quicoff_conn_t tx = add_secret(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT,
                                   QUICOFF_CHACHA20_POLY1305, version, NULL, 0, secret, 32,
                                   UINT64_MAX);
    quicoff_conn_t rx = add_secret(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT,
                                   QUICOFF_CHACHA20_POLY1305, version, NULL, 0, secret, 32,
                                   CHACHA_PN - 1);

    memset(buf, GUARD_BYTE, sizeof(buf));
    uint8_t *p = buf + GUARD;
    hex_must(p, 8, "4200bff4 01"); /* unprotected header + PING */
    struct quicoff_result r;
    check(tp_protect(w, tx, p, 0, 5, 21, CHACHA_PN, &r) == QUICOFF_OK, "protect: %s",
          quicoff_status_name(r.status));
    ok_hex(p, 21, want_hex, "protected packet is the RFC's");
    check(r.pn_off == 1 && r.pn_len == 3 && r.payload_off == 4 && r.payload_len == 1 &&
              r.packet_end == 21 && r.level == QUICOFF_LEVEL_ONE_RTT && r.flags == 0,
          "protect result fields");
    check(guards_intact(buf, sizeof(buf), GUARD, GUARD + 21), "nothing written outside");

    struct quicoff_result res[2];
    memcpy(p, want, want_len);
    unsigned n = quicoff_unprotect_datagram(w, p, (uint32_t)want_len, NULL, res, 2);
    check(n == 1 && res[0].status == QUICOFF_OK && res[0].conn == rx, "unprotect: %s",
          quicoff_status_name(res[0].status));
    ok_hex(p, 5, "4200bff401", "header and PING frame recovered");
    check(res[0].pn == CHACHA_PN && res[0].pn_len == 3 && res[0].key_phase == 0 &&
              res[0].payload_off == 4 && res[0].payload_len == 1 && res[0].packet_end == 21,
          "unprotect result: pn %llu", (unsigned long long)res[0].pn);
    struct quicoff_conn_stats cs;
    check(quicoff_conn_stats(t, rx, &cs) == QUICOFF_OK && cs.largest_pn == CHACHA_PN &&
              cs.packets == 1 && cs.bytes == 1,
          "RX stats: largest_pn %llu packets %llu bytes %llu", (unsigned long long)cs.largest_pn,
          (unsigned long long)cs.packets, (unsigned long long)cs.bytes);

    /* Without the right largest PN the 24-bit PN decodes to 49140: a different
     * nonce, so the packet does not authenticate (and is left as received). */
    quicoff_conn_remove(t, rx);
    rx = add_secret(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_CHACHA20_POLY1305, version,
                    NULL, 0, secret, 32, UINT64_MAX);
    memcpy(p, want, want_len);
    n = quicoff_unprotect_datagram(w, p, (uint32_t)want_len, NULL, res, 2);
    check(n == 1 && res[0].status == QUICOFF_AUTH_FAILED && res[0].pn == 49140,
          "no largest PN: decodes to %llu, %s", (unsigned long long)res[0].pn,
          quicoff_status_name(res[0].status));
    check(memcmp(p, want, want_len) == 0, "left as received");

    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

static void test_chacha_v1(void)
{
    run_chacha(QUICOFF_VERSION_1, chacha_v1_packet);
}

static void test_chacha_v2(void)
{
    run_chacha(QUICOFF_VERSION_2, chacha_v2_packet);
}

/* ------------------------------------------------------------------------ */

/* Initial + Handshake + 1-RTT in one datagram; then Initial + Handshake +
 * zero padding. Each packet protected in place at its offset. */
static void test_coalesced(void)
{
    uint8_t dcid[8], scid[5] = {1, 2, 3, 4, 5};
    tp_cid(42, dcid, sizeof(dcid));
    struct quicoff_table *t = table_new(16, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);

    static const struct {
        quicoff_level_t level;
        quicoff_suite_t suite;
        int is_long;
        unsigned pn_len;
        uint64_t pn;
        size_t payload;
    } parts[3] = {
        {QUICOFF_LEVEL_INITIAL, QUICOFF_AES_128_GCM, 1, 2, 0, 300},
        {QUICOFF_LEVEL_HANDSHAKE, QUICOFF_AES_256_GCM, 1, 1, 7, 90},
        {QUICOFF_LEVEL_ONE_RTT, QUICOFF_CHACHA20_POLY1305, 0, 3, 1000, 50},
    };
    quicoff_conn_t tx[3], rx[3];
    for (int i = 0; i < 3; i++) {
        struct quicoff_packet_keys k;
        tp_keys(100 + (uint32_t)i, &k);
        check(tp_add(t, QUICOFF_DIR_TX, parts[i].level, parts[i].suite, QUICOFF_VERSION_1, dcid, 8,
                     &k, &tx[i]) == QUICOFF_OK &&
                  tp_add(t, QUICOFF_DIR_RX, parts[i].level, parts[i].suite, QUICOFF_VERSION_1,
                         dcid, 8, &k, &rx[i]) == QUICOFF_OK,
              "entries for level %d", (int)parts[i].level);
    }

    for (int with_short = 1; with_short >= 0; with_short--) {
        uint8_t dg[1400], plain[1400], protected_copy[1400];
        uint32_t starts[3], ends[3], payload_offs[3];
        uint32_t off = 0;
        int nparts = with_short ? 3 : 2;
        memset(dg, 0, sizeof(dg));
        for (int i = 0; i < nparts; i++) {
            uint8_t payload[400];
            for (size_t j = 0; j < parts[i].payload; j++)
                payload[j] = (uint8_t)(j * 7 + (size_t)i + 1);
            struct tp_hdr h = {.is_long = parts[i].is_long,
                               .version = QUICOFF_VERSION_1,
                               .level = parts[i].level,
                               .dcid = dcid,
                               .dcid_len = 8,
                               .scid = scid,
                               .scid_len = sizeof(scid),
                               .pn_len = parts[i].pn_len,
                               .pn = parts[i].pn};
            uint32_t pn_off;
            size_t len = tp_build(dg + off, &h, payload, parts[i].payload, &pn_off);
            starts[i] = off;
            payload_offs[i] = off + pn_off + parts[i].pn_len;
            ends[i] = off + (uint32_t)len + QUICOFF_TAG_LEN;
            off = ends[i];
        }
        uint32_t dlen = with_short ? off : off + 77; /* 77 bytes of zero padding */
        memcpy(plain, dg, dlen);
        for (int i = 0; i < nparts; i++) {
            struct quicoff_result r;
            quicoff_status_t st = tp_protect(w, tx[i], dg, starts[i], ends[i] - QUICOFF_TAG_LEN,
                                             ends[i], parts[i].pn, &r);
            check(st == QUICOFF_OK && r.packet_end == ends[i], "protect part %d at %u: %s", i,
                  starts[i], quicoff_status_name(st));
        }
        memcpy(protected_copy, dg, dlen);

        struct quicoff_result res[8];
        unsigned n = quicoff_unprotect_datagram(w, dg, dlen, NULL, res, 8);
        check(n == (unsigned)nparts, "%s: %u results, want %d",
              with_short ? "Initial+Handshake+1-RTT" : "Initial+Handshake+padding", n, nparts);
        for (int i = 0; i < nparts && i < (int)n; i++) {
            check(res[i].status == QUICOFF_OK && res[i].conn == rx[i] &&
                      res[i].level == parts[i].level && res[i].hdr_off == starts[i] &&
                      res[i].payload_off == payload_offs[i] &&
                      res[i].payload_len == parts[i].payload && res[i].packet_end == ends[i] &&
                      res[i].pn == parts[i].pn,
                  "part %d: %s level %u hdr %u payload %u+%u end %u (want %u %u+%zu %u)", i,
                  quicoff_status_name(res[i].status), res[i].level, res[i].hdr_off,
                  res[i].payload_off, res[i].payload_len, res[i].packet_end, starts[i],
                  payload_offs[i], parts[i].payload, ends[i]);
            check(memcmp(dg + starts[i], plain + starts[i],
                         ends[i] - QUICOFF_TAG_LEN - starts[i]) == 0,
                  "part %d header and payload recovered", i);
        }
        if (!with_short)
            check(memcmp(dg + off, plain + off, dlen - off) == 0, "padding untouched");

        /* max_results bounds the walk */
        memcpy(dg, protected_copy, dlen);
        n = quicoff_unprotect_datagram(w, dg, dlen, NULL, res, 1);
        check(n == 1 && res[0].status == QUICOFF_OK, "max_results 1: one result");
        check(memcmp(dg + ends[0], protected_copy + ends[0], dlen - ends[0]) == 0,
              "max_results 1: later packets untouched");
    }

    /* An unknown-DCID packet in the middle: its extent is known (long
     * header), so the walk goes on to the next packet. */
    {
        uint8_t dg[600], other[8];
        tp_cid(43, other, 8);
        struct tp_hdr h1 = {.is_long = 1,
                            .version = QUICOFF_VERSION_1,
                            .level = QUICOFF_LEVEL_HANDSHAKE,
                            .dcid = other,
                            .dcid_len = 8,
                            .pn_len = 2,
                            .pn = 5};
        struct tp_hdr h2 = h1;
        h2.dcid = dcid;
        uint8_t payload[40] = {1};
        uint32_t l1 = (uint32_t)tp_build(dg, &h1, payload, sizeof(payload), NULL);
        /* protect the first with the Handshake TX entry (the DCID is only AAD) */
        check(tp_protect(w, tx[1], dg, 0, l1, l1 + 16, 5, NULL) == QUICOFF_OK,
              "protect unknown-DCID packet");
        uint32_t s2 = l1 + 16;
        uint32_t l2 = (uint32_t)tp_build(dg + s2, &h2, payload, sizeof(payload), NULL);
        check(tp_protect(w, tx[1], dg, s2, s2 + l2, s2 + l2 + 16, 5, NULL) == QUICOFF_OK,
              "protect known-DCID packet");
        struct quicoff_result res[4];
        unsigned n = quicoff_unprotect_datagram(w, dg, s2 + l2 + 16, NULL, res, 4);
        check(n == 2 && res[0].status == QUICOFF_UNKNOWN_CONNECTION && res[0].packet_end == s2 &&
                  res[1].status == QUICOFF_OK && res[1].hdr_off == s2 && res[1].conn == rx[1],
              "unknown then known: %u results, %s, %s", n, quicoff_status_name(res[0].status),
              quicoff_status_name(res[1].status));
    }

    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

int main(void)
{
    subtest("initial secrets", test_initial_secrets);
    subtest("initial packets", test_initials);
    subtest("RFC 9001 A.5 ChaCha20 short header", test_chacha_v1);
    subtest("RFC 9369 A.5 ChaCha20 short header", test_chacha_v2);
    subtest("coalesced", test_coalesced);
    return done_testing();
}
