// SPDX-License-Identifier: Apache-2.0
//! rustls-quic-bench: rustls's QUIC packet protection (ring provider), a peer
//! of `quicoff bench` (docs/bench.md).
//!
//! Keys: `rustls::quic::Keys::initial` per connection and side (the same
//! `Box<dyn PacketKey>` + `Box<dyn HeaderProtectionKey>` objects that quinn
//! and other rustls-based stacks use for every packet space), created once.
//! Per packet:
//!   protect:   PacketKey::encrypt_in_place(pn, header, payload) (nonce =
//!              IV xor PN inside rustls, header as AAD), the tag copied after
//!              the payload, then HeaderProtectionKey::encrypt_in_place on the
//!              first byte and the PN bytes with the 16-byte sample;
//!   unprotect: HeaderProtectionKey::decrypt_in_place, PN decode (RFC 9000
//!              A.3), PacketKey::decrypt_in_place.
//! The method (pool of 256 packets restored outside the timer, repeats of
//! >= min-ms, median/min/max, N connections in a fixed random order) and the
//! JSON lines are those of the C peers (bench/peers/peer_harness.h).
//! Checks before timing: RFC 9001 A.3 known answer (AES-128-GCM, server
//! Initial keys derived by rustls), and per row a round trip and a rejected
//! corrupted tag.  AES-128-CCM is not offered by rustls: reported as
//! "unsupported".

use std::time::Instant;

use rustls::crypto::ring::cipher_suite;
use rustls::quic::{HeaderProtectionKey, Keys, PacketKey, Version};
use rustls::{Side, SupportedCipherSuite, Tls13CipherSuite};

const TAG_LEN: usize = 16;
const PASS_PKTS: usize = 256;
const SUITES: [&str; 4] = [
    "aes-128-gcm",
    "aes-256-gcm",
    "aes-128-ccm",
    "chacha20-poly1305",
];

fn tls13(s: SupportedCipherSuite) -> &'static Tls13CipherSuite {
    match s {
        SupportedCipherSuite::Tls13(t) => t,
        #[allow(unreachable_patterns)]
        _ => unreachable!("not a TLS 1.3 suite"),
    }
}

fn suite_of(name: &str) -> Option<&'static Tls13CipherSuite> {
    match name {
        "aes-128-gcm" => Some(tls13(cipher_suite::TLS13_AES_128_GCM_SHA256)),
        "aes-256-gcm" => Some(tls13(cipher_suite::TLS13_AES_256_GCM_SHA384)),
        "chacha20-poly1305" => Some(tls13(cipher_suite::TLS13_CHACHA20_POLY1305_SHA256)),
        _ => None,
    }
}

struct Dir {
    packet: Box<dyn PacketKey>,
    header: Box<dyn HeaderProtectionKey>,
}

/// Keys of one connection: tx protects (client side), rx opens what tx sealed
/// (server side's remote keys).
struct Conn {
    tx: Dir,
    rx: Dir,
}

fn conn_keys(suite: &'static Tls13CipherSuite, cid: &[u8]) -> Conn {
    let quic = suite.quic.expect("suite has QUIC support");
    let client = Keys::initial(Version::V1, suite, quic, cid, Side::Client);
    let server = Keys::initial(Version::V1, suite, quic, cid, Side::Server);
    Conn {
        tx: Dir {
            packet: client.local.packet,
            header: client.local.header,
        },
        rx: Dir {
            packet: server.remote.packet,
            header: server.remote.header,
        },
    }
}

/// RFC 9000 A.3
fn pn_decode(expected: u64, truncated: u64, nbits: u32) -> u64 {
    let win = 1u64 << nbits;
    let hwin = win / 2;
    let mask = win - 1;
    let cand = (expected & !mask) | truncated;
    if cand + hwin <= expected && cand < (1u64 << 62) - win {
        cand + win
    } else if cand > expected + hwin && cand >= win {
        cand - win
    } else {
        cand
    }
}

/// Protect one packet in place: buf = header (through the PN) | payload | tag space.
#[inline]
fn protect(d: &Dir, buf: &mut [u8], pn_off: usize, pn: u64) -> bool {
    let pn_len = (buf[0] & 3) as usize + 1;
    let hdr_len = pn_off + pn_len;
    let plen = buf.len() - hdr_len - TAG_LEN;
    let (hdr, body) = buf.split_at_mut(hdr_len);
    let tag = match d.packet.encrypt_in_place(pn, hdr, &mut body[..plen]) {
        Ok(t) => t,
        Err(_) => return false,
    };
    body[plen..].copy_from_slice(tag.as_ref());
    let s = pn_off + 4 - hdr_len;
    let (first, rest) = hdr.split_first_mut().unwrap();
    d.header
        .encrypt_in_place(&body[s..s + 16], first, &mut rest[pn_off - 1..])
        .is_ok()
}

/// Unprotect one packet in place; `expected` is the PN the receiver expects.
#[inline]
fn unprotect(d: &Dir, buf: &mut [u8], pn_off: usize, expected: u64) -> bool {
    {
        let (h, body) = buf.split_at_mut(pn_off + 4);
        let (first, rest) = h.split_first_mut().unwrap();
        if d.header
            .decrypt_in_place(&body[..16], first, &mut rest[pn_off - 1..])
            .is_err()
        {
            return false;
        }
    }
    let pn_len = (buf[0] & 3) as usize + 1;
    let hdr_len = pn_off + pn_len;
    let mut t = 0u64;
    for &b in &buf[pn_off..hdr_len] {
        t = (t << 8) | b as u64;
    }
    let pn = pn_decode(expected, t, (pn_len * 8) as u32);
    let (hdr, body) = buf.split_at_mut(hdr_len);
    d.packet.decrypt_in_place(pn, hdr, body).is_ok()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// RFC 9001 A.3: the server Initial, server keys derived by rustls from the
/// client's DCID 8394c8f03e515708.
fn known_answer() -> Result<(), String> {
    let suite = suite_of("aes-128-gcm").unwrap();
    let quic = suite.quic.unwrap();
    let cid = hex("8394c8f03e515708");
    let server = Keys::initial(Version::V1, suite, quic, &cid, Side::Server);
    let client = Keys::initial(Version::V1, suite, quic, &cid, Side::Client);
    let header = hex("c1000000010008f067a5502a4262b50040750001");
    let payload = hex(concat!(
        "02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739",
        "88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c94",
        "0d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00",
        "020304"
    ));
    let want = hex(concat!(
        "cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a",
        "5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3",
        "dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84",
        "022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4",
        "2158407dd074ee"
    ));
    let mut buf = [header.as_slice(), payload.as_slice(), &[0u8; TAG_LEN]].concat();
    let plain = buf.clone();
    let pn_off = header.len() - 2;
    let tx = Dir {
        packet: server.local.packet,
        header: server.local.header,
    };
    let rx = Dir {
        packet: client.remote.packet,
        header: client.remote.header,
    };
    if !protect(&tx, &mut buf, pn_off, 1) || buf != want {
        return Err("RFC 9001 A.3: protected bytes differ from the RFC".into());
    }
    if !unprotect(&rx, &mut buf, pn_off, 1)
        || buf[..buf.len() - TAG_LEN] != plain[..plain.len() - TAG_LEN]
    {
        return Err("RFC 9001 A.3: unprotect did not give the plaintext back".into());
    }
    Ok(())
}

struct SizeCfg {
    label: String,
    payload: usize,
    dcid_len: usize,
}

struct Opts {
    suites: Vec<String>,
    sizes: Vec<SizeCfg>,
    conns: Vec<usize>,
    repeats: usize,
    min_ms: f64,
    protect: bool,
    unprotect: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: rustls-quic-bench [--quick] [--suite LIST] [--size LIST] [--connections LIST]\n\
         \x20                        [--repeats R] [--min-ms MS] [--op protect|unprotect|both]\n\
         Sizes: payload bytes (20..16384), or short-88/88 = the 88-byte packet (20-byte DCID,\n\
         47-byte payload).  Prints one JSON object per line on stdout."
    );
    std::process::exit(2)
}

fn parse_size(v: &str) -> Option<SizeCfg> {
    if v == "88" || v == "short-88" {
        return Some(SizeCfg {
            label: "short-88".into(),
            payload: 47,
            dcid_len: 20,
        });
    }
    let n: usize = v.parse().ok()?;
    if !(20..=16384).contains(&n) {
        return None;
    }
    Some(SizeCfg {
        label: n.to_string(),
        payload: n,
        dcid_len: 8,
    })
}

fn parse_opts() -> Opts {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut o = Opts {
        suites: vec![],
        sizes: vec![],
        conns: vec![],
        repeats: 0,
        min_ms: 0.0,
        protect: true,
        unprotect: true,
    };
    let mut quick = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let val = |i: usize| args.get(i + 1).cloned().unwrap_or_else(|| usage());
        match a {
            "--quick" => quick = true,
            "--help" | "-h" => usage(),
            "--suite" => {
                for s in val(i).split(',') {
                    if !SUITES.contains(&s) {
                        eprintln!("bad suite '{s}'");
                        usage();
                    }
                    o.suites.push(s.to_string());
                }
                i += 1;
            }
            "--size" => {
                for s in val(i).split(',') {
                    o.sizes.push(parse_size(s).unwrap_or_else(|| {
                        eprintln!("bad size '{s}'");
                        usage()
                    }));
                }
                i += 1;
            }
            "--connections" => {
                for s in val(i).split(',') {
                    match s.parse::<usize>() {
                        Ok(n) if n >= 1 => o.conns.push(n),
                        _ => usage(),
                    }
                }
                i += 1;
            }
            "--repeats" => {
                o.repeats = val(i).parse().unwrap_or_else(|_| usage());
                i += 1;
            }
            "--min-ms" => {
                o.min_ms = val(i).parse().unwrap_or_else(|_| usage());
                i += 1;
            }
            "--op" => {
                let v = val(i);
                o.protect = v == "protect" || v == "both";
                o.unprotect = v == "unprotect" || v == "both";
                if !o.protect && !o.unprotect {
                    usage();
                }
                i += 1;
            }
            _ => usage(),
        }
        i += 1;
    }
    if o.suites.is_empty() {
        o.suites = SUITES.iter().map(|s| s.to_string()).collect();
    }
    if o.sizes.is_empty() {
        for s in ["short-88", "64", "128", "256", "512", "1024", "1400"] {
            o.sizes.push(parse_size(s).unwrap());
        }
    }
    if o.conns.is_empty() {
        o.conns.push(1);
    }
    if o.repeats == 0 {
        o.repeats = if quick { 3 } else { 7 };
    }
    if o.min_ms <= 0.0 {
        o.min_ms = if quick { 10.0 } else { 50.0 };
    }
    o
}

const BACKEND: &str = "rustls 0.23 (ring 0.17)";

fn record(
    suite: &str,
    sz: &SizeCfg,
    conns: usize,
    op: &str,
    v: Option<&mut [f64]>,
    csw: i64,
    status: &str,
    reason: &str,
) {
    let hdr = 1 + sz.dcid_len + 4;
    let head = format!(
        "{{\"path\": \"rustls-quic\", \"backend\": \"{BACKEND}\", \"suite\": \"{suite}\", \"op\": \"{op}\", \
         \"label\": \"{}\", \"payload\": {}, \"packet_len\": {}, \"header_len\": {hdr}, \"dcid_len\": {}, \
         \"connections\": {conns}, \"threads\": 1, \"burst\": {PASS_PKTS}, \"header_protection\": true, ",
        sz.label,
        sz.payload,
        hdr + sz.payload + TAG_LEN,
        sz.dcid_len
    );
    match v {
        Some(v) if !v.is_empty() => {
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let n = v.len();
            let med = if n % 2 == 1 {
                v[n / 2]
            } else {
                (v[n / 2 - 1] + v[n / 2]) / 2.0
            };
            println!(
                "{head}\"repeats\": {n}, \"ns_median\": {med:.2}, \"ns_min\": {:.2}, \"ns_max\": {:.2}, \
                 \"mpps\": {:.4}, \"gbps\": {:.4}, \"ctx_switches\": {csw}, \"status\": \"ok\"}}",
                v[0],
                v[n - 1],
                1e3 / med,
                sz.payload as f64 * 8.0 / med
            );
        }
        _ => println!("{head}\"status\": \"{status}\", \"reason\": \"{reason}\"}}"),
    }
}

/// Involuntary context switches of this process so far (another task took the CPU).
fn invol_csw() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("nonvoluntary_ctxt_switches:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

struct Xorshift(u64);
impl Xorshift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

fn run_row(
    o: &Opts,
    suite_name: &str,
    suite: &'static Tls13CipherSuite,
    sz: &SizeCfg,
    nconns: usize,
) -> bool {
    let hdr = 1 + sz.dcid_len + 4;
    let len = hdr + sz.payload + TAG_LEN;
    let stride = (len + 63) & !63;
    let pn_off = 1 + sz.dcid_len;
    let mut rnd = Xorshift(0x9e37_79b9_7f4a_7c15 ^ sz.payload as u64);
    let mut plain = vec![0u8; stride * PASS_PKTS];
    for i in 0..PASS_PKTS {
        let p = &mut plain[i * stride..i * stride + len];
        p[0] = 0x43;
        for k in 0..sz.dcid_len {
            p[1 + k] = 0xd0 + k as u8;
        }
        p[pn_off..pn_off + 4].copy_from_slice(&((1000 + i) as u32).to_be_bytes());
        for b in &mut p[hdr..hdr + sz.payload] {
            *b = rnd.next() as u8;
        }
    }
    let mut perm: Vec<u32> = (0..nconns as u32).collect();
    for i in (2..=nconns).rev() {
        let k = (rnd.next() % i as u64) as usize;
        perm.swap(i - 1, k);
    }
    eprintln!(
        "rustls-quic: {suite_name} {} x{nconns} connections: setting up keys",
        sz.label
    );
    let cid = [0x83u8, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08];
    let conns: Vec<Conn> = (0..nconns).map(|_| conn_keys(suite, &cid)).collect();

    let fail = |why: &str| {
        eprintln!(
            "rustls-quic: {suite_name} {}: CHECK FAILED: {why}",
            sz.label
        );
        record(suite_name, sz, nconns, "protect", None, 0, "failed", why);
        record(suite_name, sz, nconns, "unprotect", None, 0, "failed", why);
        false
    };
    // The protected pool, under connection 0; round trip under the last one.
    let mut prot = plain.clone();
    for i in 0..PASS_PKTS {
        if !protect(
            &conns[0].tx,
            &mut prot[i * stride..i * stride + len],
            pn_off,
            1000 + i as u64,
        ) {
            return fail("protect of the pool failed");
        }
    }
    if prot[hdr..hdr + sz.payload] == plain[hdr..hdr + sz.payload] {
        return fail("protect left the payload unchanged");
    }
    let mut work = prot.clone();
    for i in 0..PASS_PKTS {
        let b = &mut work[i * stride..i * stride + len];
        if !unprotect(&conns[nconns - 1].rx, b, pn_off, 1000 + i as u64) {
            return fail("unprotect of the pool failed");
        }
        if b[..len - TAG_LEN] != plain[i * stride..i * stride + len - TAG_LEN] {
            return fail("round trip gave different bytes");
        }
    }
    work[..len].copy_from_slice(&prot[..len]);
    work[len - 1] ^= 1;
    if unprotect(&conns[0].rx, &mut work[..len], pn_off, 1000) {
        return fail("a packet with a corrupted tag was accepted");
    }

    let mut conn_of = vec![0u32; PASS_PKTS];
    let mut cursor = 0usize;
    let mut ok = true;
    for op in ["protect", "unprotect"] {
        let is_protect = op == "protect";
        if (is_protect && !o.protect) || (!is_protect && !o.unprotect) {
            continue;
        }
        let src = if is_protect { &plain } else { &prot };
        let mut failures = 0usize;
        let mut v = Vec::with_capacity(o.repeats);
        let mut csw0 = 0;
        for r in 0..=o.repeats {
            if r == 1 {
                csw0 = invol_csw(); // after the warm-up
            }
            let goal = (o.min_ms * 1e6) as u128;
            let mut timed = 0u128;
            let mut pkts = 0u64;
            while timed < goal {
                work.copy_from_slice(src); // restore, untimed
                for c in conn_of.iter_mut() {
                    *c = perm[cursor];
                    cursor += 1;
                    if cursor == nconns {
                        cursor = 0;
                    }
                }
                let t0 = Instant::now();
                for i in 0..PASS_PKTS {
                    let b = &mut work[i * stride..i * stride + len];
                    let c = &conns[conn_of[i] as usize];
                    let good = if is_protect {
                        protect(&c.tx, b, pn_off, 1000 + i as u64)
                    } else {
                        unprotect(&c.rx, b, pn_off, 1000 + i as u64)
                    };
                    failures += (!good) as usize;
                }
                timed += t0.elapsed().as_nanos();
                pkts += PASS_PKTS as u64;
            }
            if r > 0 {
                // repeat 0 is the warm-up
                v.push(timed as f64 / pkts as f64);
            }
        }
        let csw = invol_csw() - csw0;
        if failures > 0 {
            record(
                suite_name,
                sz,
                nconns,
                op,
                None,
                0,
                "failed",
                "packets failed during the timed passes",
            );
            ok = false;
        } else {
            record(suite_name, sz, nconns, op, Some(&mut v), csw, "ok", "");
        }
    }
    ok
}

fn main() {
    let o = parse_opts();
    let mut ok = true;
    match known_answer() {
        Ok(()) => eprintln!("rustls-quic: known answer ok: RFC 9001 A.3 (AES-128-GCM)"),
        Err(e) => {
            eprintln!("rustls-quic: CHECK FAILED: {e}");
            ok = false;
        }
    }
    for s in &o.suites {
        for sz in &o.sizes {
            for &n in &o.conns {
                let suite = suite_of(s);
                let (status, reason) = match (suite, ok) {
                    (None, _) => ("unsupported", "rustls offers no TLS_AES_128_CCM_SHA256"),
                    (_, false) => ("failed", "known-answer check failed (see stderr)"),
                    _ => ("", ""),
                };
                if !status.is_empty() {
                    for op in ["protect", "unprotect"] {
                        if (op == "protect" && o.protect) || (op == "unprotect" && o.unprotect) {
                            record(s, sz, n, op, None, 0, status, reason);
                        }
                    }
                    continue;
                }
                ok &= run_row(&o, s, suite.unwrap(), sz, n);
            }
        }
    }
    std::process::exit(if ok { 0 } else { 1 });
}
