//! engine25519 server: decodes, dispatches and replies. (initial increment: Version, Stats and
//! X25519 on the labelled software fallback; the engine backends follow.)

use num_traits::FromPrimitive;
use xous::{Message, MessageEnvelope};
use xous_ipc::Buffer;

use engine25519::api::{self, archive_fits, BackendId, Opcode, StatsMsg, Status, X25519Msg, MAGIC};

#[derive(Default)]
struct Counters {
    jobs: u64,
    cycles: u64,
    fallbacks: u64,
    errors: u64,
}

fn decode<T>(mem: &xous::MemoryMessage) -> Result<T, Status>
where
    T: rkyv::Archive,
    rkyv::Archived<T>: rkyv::Deserialize<T, dyn rkyv::Fallible<Error = xous_ipc::XousUnreachable>>,
{
    let pos = mem.offset.map(|o| o.get()).unwrap_or(0);
    if !archive_fits::<T>(mem.buf.len(), pos) {
        return Err(Status::BadMessage);
    }
    let buf = unsafe { Buffer::from_memory_message(mem) };
    buf.to_original::<T, _>().map_err(|_| Status::BadMessage)
}

fn main() -> ! {
    log_server_init();
    let xns = xous_api_names::XousNames::new().unwrap();
    let sid = xns.register_name(api::SERVER_NAME, None).expect("can't register server");
    log::info!("engine25519: registered as '{}'", api::SERVER_NAME);
    let mut c = Counters::default();
    loop {
        let mut env: MessageEnvelope = xous::receive_message(sid).unwrap();
        let op = Opcode::from_usize(env.body.id());
        match (&mut env.body, op) {
            (Message::BlockingScalar(_), Some(Opcode::Version)) => {
                xous::return_scalar2(env.sender, 0, ((api::API_VERSION << 16) | BackendId::Software as u32) as usize).ok();
            }
            (Message::BlockingScalar(_), _) => {
                c.errors += 1;
                xous::return_scalar2(env.sender, Status::UnknownOpcode as usize, 0).ok();
            }
            (Message::MutableBorrow(mem), Some(Opcode::Stats)) => {
                let st = StatsMsg {
                    magic: MAGIC,
                    status: 0,
                    api_version: api::API_VERSION,
                    backend: BackendId::Software as u32,
                    jobs: c.jobs,
                    cycles: c.cycles,
                    fallbacks: c.fallbacks,
                    errors: c.errors,
                    ..Default::default()
                };
                let mut buf = unsafe { Buffer::from_memory_message_mut(mem) };
                buf.replace(st).ok();
            }
            (Message::MutableBorrow(mem), Some(Opcode::X25519)) => {
                let mut m: X25519Msg = match decode(mem) {
                    Ok(m) => m,
                    Err(_) => {
                        c.errors += 1;
                        continue;
                    }
                };
                let s = x25519_dalek::StaticSecret::from(m.scalar);
                m.result = s.diffie_hellman(&x25519_dalek::PublicKey::from(m.u)).to_bytes();
                m.scalar = [0; 32];
                m.status = Status::Ok as u32;
                m.backend = BackendId::Software as u32;
                c.fallbacks += 1;
                let mut buf = unsafe { Buffer::from_memory_message_mut(mem) };
                buf.replace(m).ok();
            }
            _ => {
                c.errors += 1;
            }
        }
    }
}

fn log_server_init() {
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
}
