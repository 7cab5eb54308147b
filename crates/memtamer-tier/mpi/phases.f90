! Fortran client of the interposer: 5 iterations of allreduce + barrier.
! Each iteration has 3 phases (2 MPI calls inside the loop body); the
! report line of every rank must say "phases 3" and the sum must be right.
program phases
  use mpi
  implicit none
  integer :: ierr, rank, nranks, it
  double precision :: x, s
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  do it = 1, 5
    call mt_tier_iteration()
    x = rank + it
    call MPI_Allreduce(x, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end do
  if (rank == 0) then
    if (abs(s - (nranks * (nranks - 1) / 2.0d0 + nranks * 5.0d0)) < 1d-9) then
      print '(a)', 'fortran VERIFIED'
    else
      print '(a)', 'fortran FAILED'
    end if
  end if
  call MPI_Finalize(ierr)
end program phases
