import sys

from kubesched.cli.main import main

sys.exit(main())
