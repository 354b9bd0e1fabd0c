from benchctl.cli import main

main()
