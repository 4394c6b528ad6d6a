; Field multiplication: %31 = %0 * %1 mod p (both ISAs). Bit 255 of each operand is ignored;
; the result is fully reduced.
mul %31, %0, %1
fin
