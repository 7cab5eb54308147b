# memtamer-phase-profile v2
rank 1 4
iteration 1
sampler 1000000 16 4096 64
object recvbuf 524288
object sendbuf 524288
object u1 524288
object u0 524288
object twiddle 4096
phase phase0 644480 0 644600 0
access sendbuf 8192 16
access u0 8192 16
phase phase1 13747853 13096253 2013077 1362048
access recvbuf 14848 29
access sendbuf 7168 14
access u1 8192 16
access twiddle 64 1
phase phase2 11123004 10716028 470931 64045
access sendbuf 8192 16
access u1 8192 16
access twiddle 64 1
phase phase3 10530342 10258246 831387 559612
access recvbuf 14336 28
access sendbuf 7680 15
access u0 8192 16
