#include "textflag.h"

// func prefetchWords(base *uint64, idx []uint64)
TEXT ·prefetchWords(SB), NOSPLIT, $0-32
	MOVQ base+0(FP), AX
	MOVQ idx_base+8(FP), SI
	MOVQ idx_len+16(FP), CX
	TESTQ CX, CX
	JEQ done
loop:
	MOVQ (SI), DX
	PREFETCHT0 (AX)(DX*8)
	ADDQ $8, SI
	DECQ CX
	JNE loop
done:
	RET

// func prefetchKeys(keys [][]byte)
TEXT ·prefetchKeys(SB), NOSPLIT, $0-24
	MOVQ keys_base+0(FP), SI
	MOVQ keys_len+8(FP), CX
	TESTQ CX, CX
	JEQ kdone
kloop:
	MOVQ 8(SI), DX
	TESTQ DX, DX
	JEQ knext
	MOVQ (SI), AX
	PREFETCHT0 (AX)
	PREFETCHT0 -1(AX)(DX*1)
knext:
	ADDQ $24, SI
	DECQ CX
	JNE kloop
kdone:
	RET

// func prefetchAddrs(addrs []uintptr)
TEXT ·prefetchAddrs(SB), NOSPLIT, $0-24
	MOVQ addrs_base+0(FP), SI
	MOVQ addrs_len+8(FP), CX
	TESTQ CX, CX
	JEQ adone
aloop:
	MOVQ (SI), AX
	PREFETCHT0 (AX)
	ADDQ $8, SI
	DECQ CX
	JNE aloop
adone:
	RET
