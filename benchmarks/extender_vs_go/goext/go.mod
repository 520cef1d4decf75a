module kubesched.local/goext

go 1.22
