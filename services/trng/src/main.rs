//! TRNG server (step 0: OS entropy -> ChaCha20 conditioner; being extended).
use num_traits::FromPrimitive;
use trng::api::{self, Opcode, TrngError};
use trng_core::conditioner::{Conditioner, ConditionerConfig};

fn os_word() -> Option<u32> {
    let mut b = [0u8; 4];
    getrandom::getrandom(&mut b).ok()?;
    Some(u32::from_le_bytes(b))
}

fn main() {
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let xns = xous_api_names::XousNames::new().unwrap();
    let sid = xns.register_name(api::SERVER_NAME, None).expect("can't register server");
    log::info!("TRNG server registered as {:?}", api::SERVER_NAME);
    let mut cond = Conditioner::new(ConditionerConfig::default());
    while cond.words_needed() > 0 {
        cond.absorb(os_word().expect("getrandom"));
    }
    loop {
        let mut msg = xous::receive_message(sid).unwrap();
        match FromPrimitive::from_usize(msg.body.id()) {
            Some(Opcode::GetTrng) => {
                let mut b = [0u8; 8];
                match cond.generate(&mut b, &mut os_word) {
                    Ok(()) => {
                        let (a, c) = (u32::from_le_bytes(b[..4].try_into().unwrap()), u32::from_le_bytes(b[4..].try_into().unwrap()));
                        xous::return_scalar2(msg.sender, a as usize, c as usize).ok();
                    }
                    Err(_) => {
                        xous::return_scalar(msg.sender, TrngError::HealthFailure.code()).ok();
                    }
                }
            }
            Some(Opcode::FillTrng) => {
                if let Some(mem) = msg.body.memory_message_mut() {
                    let n = mem.valid.map(|v| v.get()).unwrap_or(0);
                    if n == 0 || n > mem.buf.len() || n > api::MAX_FILL_BYTES {
                        mem.offset = xous::MemoryAddress::new(TrngError::TooLarge.code());
                        mem.valid = None;
                    } else {
                        let buf = unsafe { core::slice::from_raw_parts_mut(mem.buf.as_mut_ptr(), n) };
                        if cond.generate(buf, &mut os_word).is_err() {
                            mem.offset = xous::MemoryAddress::new(TrngError::HealthFailure.code());
                            mem.valid = None;
                        } else {
                            mem.offset = None;
                        }
                    }
                }
            }
            Some(Opcode::Quit) => {
                xous::return_scalar(msg.sender, 0).ok();
                break;
            }
            _ => {
                if msg.body.is_blocking() && !msg.body.has_memory() {
                    xous::return_scalar(msg.sender, TrngError::UnknownOpcode.code()).ok();
                }
            }
        }
    }
    xns.unregister_server(sid).ok();
    xous::destroy_server(sid).ok();
    xous::terminate_process(0);
}
