//! Medium <-> router wire protocol, version 1 (docs/interfaces.md section 2): encoding and
//! validation of the binary messages. Pure functions, no I/O.

use crate::MAX_PAYLOAD;

pub const MAGIC: u16 = 0x4D4D;
pub const VERSION: u8 = 1;
pub const HEADER_LEN: usize = 16;

pub const T_HELLO: u8 = 1;
pub const T_TX: u8 = 2;
pub const T_SET_POWER: u8 = 3;
pub const T_BYE: u8 = 4;
pub const T_WELCOME: u8 = 129;
pub const T_TX_STATUS: u8 = 130;
pub const T_RX: u8 = 131;

/// Fixed part of a TX body before the payload.
pub const TX_FIXED: usize = 8 + 4 + 4 + 1 + 1 + 2;

/// A message from a router, validated.
#[derive(Clone, Debug, PartialEq)]
pub enum RouterMsg {
    Hello { station_id: u32, flags: u32 },
    Tx { cookie: u64, dst: u32, tx_power_dbm: f32, retry_limit: u8, flags: u8, payload: Vec<u8> },
    SetPower { neighbour: u32, tx_power_dbm: f32 },
    Bye,
}

/// Why a datagram was dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Wrong magic, version, type or length.
    Malformed(&'static str),
    /// Valid header whose seq is not the previous + 1.
    OutOfOrder { expected: u32, got: u32 },
    /// A TX whose payload is longer than 2304 bytes (cookie given so it can be REJECTED).
    Oversized { cookie: u64 },
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}
fn f32_at(b: &[u8], o: usize) -> f32 {
    f32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

/// Parse a datagram from a router. `last_seq` is the previous seq accepted on this connection
/// (0 before the first); it is updated to the received seq whenever the header is well formed,
/// so one bad seq costs one message and the stream resynchronises.
pub fn parse_router(b: &[u8], last_seq: &mut u32) -> Result<RouterMsg, WireError> {
    if b.len() < HEADER_LEN {
        return Err(WireError::Malformed("short header"));
    }
    if u16_at(b, 0) != MAGIC {
        return Err(WireError::Malformed("magic"));
    }
    if b[2] != VERSION {
        return Err(WireError::Malformed("version"));
    }
    let ty = b[3];
    let seq = u32_at(b, 4);
    let body = &b[HEADER_LEN..];
    let expected = last_seq.wrapping_add(1);
    if seq != expected {
        *last_seq = seq;
        return Err(WireError::OutOfOrder { expected, got: seq });
    }
    *last_seq = seq;
    match ty {
        T_HELLO => {
            if body.len() != 8 {
                return Err(WireError::Malformed("HELLO length"));
            }
            Ok(RouterMsg::Hello { station_id: u32_at(body, 0), flags: u32_at(body, 4) })
        }
        T_TX => {
            if body.len() < TX_FIXED {
                return Err(WireError::Malformed("TX length"));
            }
            let cookie = u64_at(body, 0);
            let len = u16_at(body, 18) as usize;
            if body.len() != TX_FIXED + len {
                return Err(WireError::Malformed("TX len field"));
            }
            if len > MAX_PAYLOAD {
                return Err(WireError::Oversized { cookie });
            }
            Ok(RouterMsg::Tx {
                cookie,
                dst: u32_at(body, 8),
                tx_power_dbm: f32_at(body, 12),
                retry_limit: body[16],
                flags: body[17],
                payload: body[TX_FIXED..].to_vec(),
            })
        }
        T_SET_POWER => {
            if body.len() != 8 {
                return Err(WireError::Malformed("SET_POWER length"));
            }
            Ok(RouterMsg::SetPower { neighbour: u32_at(body, 0), tx_power_dbm: f32_at(body, 4) })
        }
        T_BYE => {
            if !body.is_empty() {
                return Err(WireError::Malformed("BYE length"));
            }
            Ok(RouterMsg::Bye)
        }
        _ => Err(WireError::Malformed("type")),
    }
}

fn header(out: &mut Vec<u8>, ty: u8, seq: u32, time_ns: u64) {
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.push(VERSION);
    out.push(ty);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&time_ns.to_le_bytes());
}

pub fn welcome(seq: u32, time_ns: u64, station_id: u32, n_stations: u32, epoch_monotonic_ns: u64, default_tx_power_dbm: f32) -> Vec<u8> {
    let mut o = Vec::with_capacity(HEADER_LEN + 24);
    header(&mut o, T_WELCOME, seq, time_ns);
    o.extend_from_slice(&station_id.to_le_bytes());
    o.extend_from_slice(&n_stations.to_le_bytes());
    o.extend_from_slice(&epoch_monotonic_ns.to_le_bytes());
    o.extend_from_slice(&default_tx_power_dbm.to_le_bytes());
    o.extend_from_slice(&0u32.to_le_bytes());
    o
}

#[allow(clippy::too_many_arguments)]
pub fn tx_status(seq: u32, time_ns: u64, cookie: u64, status: u8, rts_attempts: u8, data_attempts: u8, cause: u8, t_start_ns: u64, t_end_ns: u64) -> Vec<u8> {
    let mut o = Vec::with_capacity(HEADER_LEN + 28);
    header(&mut o, T_TX_STATUS, seq, time_ns);
    o.extend_from_slice(&cookie.to_le_bytes());
    o.extend_from_slice(&[status, rts_attempts, data_attempts, cause]);
    o.extend_from_slice(&t_start_ns.to_le_bytes());
    o.extend_from_slice(&t_end_ns.to_le_bytes());
    o
}

#[allow(clippy::too_many_arguments)]
pub fn rx(seq: u32, time_ns: u64, src: u32, dst: u32, flags: u8, rssi_dbm: f32, snr_db: f32, noise_dbm: f32, payload: &[u8]) -> Vec<u8> {
    let mut o = Vec::with_capacity(HEADER_LEN + 26 + payload.len());
    header(&mut o, T_RX, seq, time_ns);
    o.extend_from_slice(&src.to_le_bytes());
    o.extend_from_slice(&dst.to_le_bytes());
    o.extend_from_slice(&[flags, 0, 0, 0]);
    o.extend_from_slice(&rssi_dbm.to_le_bytes());
    o.extend_from_slice(&snr_db.to_le_bytes());
    o.extend_from_slice(&noise_dbm.to_le_bytes());
    o.extend_from_slice(&(payload.len() as u16).to_le_bytes());
    o.extend_from_slice(payload);
    o
}

/// Build a router -> medium message (used by tests and load generators).
pub fn router_msg(seq: u32, m: &RouterMsg) -> Vec<u8> {
    let mut o = Vec::new();
    match m {
        RouterMsg::Hello { station_id, flags } => {
            header(&mut o, T_HELLO, seq, 0);
            o.extend_from_slice(&station_id.to_le_bytes());
            o.extend_from_slice(&flags.to_le_bytes());
        }
        RouterMsg::Tx { cookie, dst, tx_power_dbm, retry_limit, flags, payload } => {
            header(&mut o, T_TX, seq, 0);
            o.extend_from_slice(&cookie.to_le_bytes());
            o.extend_from_slice(&dst.to_le_bytes());
            o.extend_from_slice(&tx_power_dbm.to_le_bytes());
            o.push(*retry_limit);
            o.push(*flags);
            o.extend_from_slice(&(payload.len() as u16).to_le_bytes());
            o.extend_from_slice(payload);
        }
        RouterMsg::SetPower { neighbour, tx_power_dbm } => {
            header(&mut o, T_SET_POWER, seq, 0);
            o.extend_from_slice(&neighbour.to_le_bytes());
            o.extend_from_slice(&tx_power_dbm.to_le_bytes());
        }
        RouterMsg::Bye => header(&mut o, T_BYE, seq, 0),
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_round_trip_and_seq() {
        let m = RouterMsg::Tx { cookie: 7, dst: 2, tx_power_dbm: f32::NAN, retry_limit: 0, flags: 1, payload: vec![1, 2, 3] };
        let b = router_msg(1, &m);
        assert_eq!(b.len(), HEADER_LEN + TX_FIXED + 3);
        let mut last = 0;
        match parse_router(&b, &mut last).unwrap() {
            RouterMsg::Tx { cookie, payload, flags, .. } => {
                assert_eq!((cookie, payload, flags), (7, vec![1, 2, 3], 1))
            }
            other => panic!("{other:?}"),
        }
        // Same seq again: out of order.
        assert_eq!(parse_router(&b, &mut last), Err(WireError::OutOfOrder { expected: 2, got: 1 }));
    }

    #[test]
    fn malformed_and_oversized() {
        let mut last = 0;
        assert!(matches!(parse_router(&[0u8; 5], &mut last), Err(WireError::Malformed(_))));
        let mut b = router_msg(1, &RouterMsg::Bye);
        b[0] = 0;
        assert!(matches!(parse_router(&b, &mut last), Err(WireError::Malformed("magic"))));
        let big = RouterMsg::Tx { cookie: 9, dst: 2, tx_power_dbm: 0.0, retry_limit: 0, flags: 0, payload: vec![0; 2305] };
        let mut last = 0;
        assert_eq!(parse_router(&router_msg(1, &big), &mut last), Err(WireError::Oversized { cookie: 9 }));
    }

    #[test]
    fn medium_messages_have_documented_sizes() {
        assert_eq!(welcome(1, 0, 1, 2, 3, 4.0).len(), 16 + 24);
        assert_eq!(tx_status(1, 0, 1, 0, 1, 1, 0, 0, 0).len(), 16 + 28);
        assert_eq!(rx(1, 0, 1, 2, 0, 0.0, 0.0, 0.0, &[9; 10]).len(), 16 + 26 + 10);
    }
}
